//! Repository paths a memory names: `` `src/db/pool.rs` `` in backticks, or bare tokens shaped
//! like paths (`src/lib.rs`, `migrations/`, `Cargo.toml`). The client checks them against the
//! working tree: the ones that exist when a memory is pushed are kept with the version
//! (`PushChange::named_paths`), and a memory that names a path gone since may be stale.
//!
//! Pure text work, no file system: which tokens *could* be paths. Prose (`and/or`), URLs,
//! version numbers, home paths (`~/.ssh`), absolute paths, globs and `..` are never tokens, and
//! every token is a relative `/`-separated path the server accepts in `named_paths`.

use std::collections::BTreeMap;

/// One path-shaped token of a memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathToken {
    /// Relative, `/`-separated, without a leading `./` or a trailing `/`.
    pub path: String,
    /// Written in backticks somewhere in the memory (an explicit reference to a file).
    pub backticked: bool,
    /// 1-based line of its first occurrence.
    pub line: u32,
}

/// The longest path kept (the server's limit for `named_paths`).
const MAX_PATH_BYTES: usize = 255;

/// Extensions that make a token without a `/` a file name (`Cargo.toml`, `schema.sql`). A token
/// with a `/` needs none of these: the `/` already says "path".
const FILE_EXTENSIONS: &[&str] = &[
    "adoc",
    "bash",
    "bat",
    "bazel",
    "bzl",
    "c",
    "cc",
    "cfg",
    "cjs",
    "clj",
    "cljs",
    "cmake",
    "cmd",
    "conf",
    "cpp",
    "cs",
    "css",
    "csv",
    "cts",
    "cxx",
    "dart",
    "diff",
    "dockerfile",
    "edn",
    "elm",
    "env",
    "erb",
    "erl",
    "ex",
    "exs",
    "fish",
    "fs",
    "gemspec",
    "go",
    "gql",
    "gradle",
    "graphql",
    "groovy",
    "h",
    "hcl",
    "hh",
    "hpp",
    "hrl",
    "hs",
    "htm",
    "html",
    "ini",
    "ipynb",
    "java",
    "jl",
    "js",
    "json",
    "json5",
    "jsonc",
    "jsx",
    "kt",
    "kts",
    "less",
    "lock",
    "lua",
    "markdown",
    "md",
    "mdx",
    "mjs",
    "mk",
    "ml",
    "mli",
    "mod",
    "mts",
    "nix",
    "patch",
    "php",
    "pl",
    "pm",
    "properties",
    "proto",
    "ps1",
    "py",
    "pyi",
    "rake",
    "rb",
    "rs",
    "rst",
    "sass",
    "scala",
    "scss",
    "service",
    "sh",
    "sol",
    "sql",
    "sum",
    "svelte",
    "swift",
    "tf",
    "tfvars",
    "toml",
    "ts",
    "tsv",
    "tsx",
    "txt",
    "vue",
    "xml",
    "yaml",
    "yml",
    "zig",
    "zsh",
];

/// File names without an extension (or dotfiles) that are files all the same.
const FILE_NAMES: &[&str] = &[
    ".dockerignore",
    ".editorconfig",
    ".env",
    ".envrc",
    ".gitattributes",
    ".gitignore",
    ".gitmodules",
    ".npmrc",
    ".nvmrc",
    ".tool-versions",
    "CODEOWNERS",
    "Containerfile",
    "Dockerfile",
    "Gemfile",
    "Jenkinsfile",
    "Justfile",
    "LICENSE",
    "Makefile",
    "Procfile",
    "Rakefile",
    "Vagrantfile",
    "justfile",
    "makefile",
];

/// Top-level domains that make a first segment a host name (`github.com/acme/api`), not a
/// directory.
const HOST_SUFFIXES: &[&str] = &[
    "ai", "app", "co", "com", "de", "dev", "edu", "eu", "gov", "internal", "io", "local", "me",
    "net", "org", "uk", "us",
];

/// Characters stripped from both ends of a bare token (markdown emphasis, brackets, quotes,
/// sentence punctuation). A leading `.` stays: it starts a dotfile.
const OPENERS: &[char] = &['(', '[', '{', '<', '"', '\'', '*', '_'];
const CLOSERS: &[char] = &[
    ')', ']', '}', '>', '"', '\'', '*', '_', '.', ',', ';', ':', '!', '?',
];

/// Every path-shaped token of a memory, in order of first occurrence, each path once. The
/// frontmatter is skipped except its `description:` (its other keys name memories, not
/// repository files); fenced code blocks count as bare text.
pub fn path_tokens(content: &str) -> Vec<PathToken> {
    let mut found: Vec<PathToken> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |path: String, backticked: bool, line: u32| match index.get(&path) {
        Some(&i) => found[i].backticked |= backticked,
        None => {
            index.insert(path.clone(), found.len());
            found.push(PathToken {
                path,
                backticked,
                line,
            });
        }
    };
    let mut in_frontmatter = false;
    let mut fence: Option<String> = None;
    for (i, line) in content.lines().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let trimmed = line.trim();
        if i == 0 && trimmed == "---" {
            in_frontmatter = true;
            continue;
        }
        if in_frontmatter {
            if trimmed == "---" {
                in_frontmatter = false;
            } else if let Some(d) = trimmed.strip_prefix("description:") {
                for (p, backticked) in line_tokens(d) {
                    add(p, backticked, n);
                }
            }
            continue;
        }
        if let Some(f) = &fence {
            if trimmed.starts_with(f.as_str()) {
                fence = None;
            } else {
                for word in line.split_whitespace() {
                    if let Some(p) = bare(word) {
                        add(p, false, n);
                    }
                }
            }
            continue;
        }
        if let Some(f) = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f)) {
            fence = Some(f.to_owned());
            continue;
        }
        for (p, backticked) in line_tokens(line) {
            add(p, backticked, n);
        }
    }
    found
}

/// The path tokens of one line of markdown, each with whether it was backticked.
fn line_tokens(line: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for piece in inline(line) {
        match piece {
            Piece::Code(code) if !code.contains(char::is_whitespace) => {
                out.extend(backticked(code).map(|p| (p, true)));
            }
            // A command in backticks (`vim src/db/pool.rs`): its words are bare text.
            Piece::Code(text) | Piece::Text(text) => {
                out.extend(text.split_whitespace().filter_map(bare).map(|p| (p, false)));
            }
        }
    }
    out
}

enum Piece<'a> {
    Text(&'a str),
    Code(&'a str),
}

/// A line cut into text and inline code spans (a run of N backticks up to the next run of
/// exactly N; an unclosed run is text).
fn inline(line: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut text_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let mut j = i + open;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let run = run_at(j);
                if run == open {
                    close = Some(j);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(c) => {
                out.push(Piece::Text(&line[text_start..i]));
                out.push(Piece::Code(line[i + open..c].trim()));
                i = c + open;
                text_start = i;
            }
            None => i += open,
        }
    }
    out.push(Piece::Text(&line[text_start..]));
    out
}

/// A backticked span that is a path: anything path-shaped with a `/`, or a file name.
fn backticked(code: &str) -> Option<String> {
    let path = normalized(code)?;
    (path.contains('/') || is_file_name(&path)).then_some(path)
}

/// A bare word that is a path: a file name, a path whose last segment is a file name, or a
/// directory written with its trailing `/` (`migrations/`). Two words joined by a `/` (`and/or`,
/// `client/server`) are prose.
fn bare(word: &str) -> Option<String> {
    let word = word.trim_start_matches(OPENERS).trim_end_matches(CLOSERS);
    // A markdown link's target: `[the pool](src/db/pool.rs)`.
    let word = word.rsplit_once("](").map_or(word, |(_, target)| target);
    let dir = word.ends_with('/');
    let path = normalized(word)?;
    let last = path.rsplit('/').next().unwrap_or(&path);
    let has_segments = path.contains('/');
    let ok = is_file_name(last)
        || (has_segments && has_extension(last))
        || (dir && path.chars().any(|c| c.is_ascii_alphabetic()));
    ok.then_some(path)
}

/// The token as a relative path, or None when it cannot be one: `./` and a trailing `/` and a
/// `:LINE[:COL]` or `#anchor` suffix removed; then only `[A-Za-z0-9._+-]` in segments, no empty,
/// `.` or `..` segment, not absolute, not under `~`, no URL or host name.
fn normalized(token: &str) -> Option<String> {
    let mut t = token;
    if let Some((before, _)) = t.split_once('#') {
        t = before;
    }
    // `src/lib.rs:42` and `src/lib.rs:42:7`.
    while let Some((before, after)) = t.rsplit_once(':') {
        if after.is_empty() || !after.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        t = before;
    }
    while let Some(rest) = t.strip_prefix("./") {
        t = rest;
    }
    let t = t.trim_end_matches('/');
    if t.is_empty() || t.len() > MAX_PATH_BYTES {
        return None;
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '/');
    if !t.chars().all(allowed) || t.starts_with('/') {
        return None;
    }
    let segments: Vec<&str> = t.split('/').collect();
    if segments
        .iter()
        .any(|s| s.is_empty() || s.chars().all(|c| c == '.'))
    {
        return None;
    }
    // A segment needs a letter or a digit (`-`, `+`, `_` alone are not names).
    if segments
        .iter()
        .any(|s| !s.chars().any(|c| c.is_ascii_alphanumeric()))
    {
        return None;
    }
    // `github.com/acme/api`, `docs.example.io/x`: a host, not a directory.
    if segments.len() > 1 && is_host(segments[0]) {
        return None;
    }
    // Version numbers and numeric runs (`1.2.3`, `v2.0`, `24/7`, `2026/11/30`).
    if segments.iter().all(|s| is_versionish(s)) {
        return None;
    }
    Some(t.to_owned())
}

fn is_host(segment: &str) -> bool {
    !segment.starts_with('.')
        && segment
            .rsplit_once('.')
            .is_some_and(|(name, tld)| !name.is_empty() && HOST_SUFFIXES.contains(&tld))
}

fn is_versionish(segment: &str) -> bool {
    let s = segment.strip_prefix(['v', 'V']).unwrap_or(segment);
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// `name.ext` with an extension of 1-10 letters and digits that holds a letter (`1.2` and
/// `x.42` are numbers) and a name that is not empty.
fn has_extension(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// A file name on its own: a known extension (`Cargo.toml`, `app.env`) or a well-known name
/// without one (`Makefile`, `.gitignore`). A bare `Node.js` passes too; the client keeps only
/// tokens that exist in the working tree.
fn is_file_name(name: &str) -> bool {
    if name.contains('/') {
        return false;
    }
    if FILE_NAMES.contains(&name) {
        return true;
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && !stem.ends_with('.')
                && FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(content: &str) -> Vec<String> {
        path_tokens(content).into_iter().map(|t| t.path).collect()
    }

    fn one(content: &str) -> Option<PathToken> {
        let mut t = path_tokens(content);
        assert!(t.len() <= 1, "{content:?} gave {t:?}");
        t.pop()
    }

    #[test]
    fn backticked_and_bare_paths() {
        let t = path_tokens(
            "---\nname: pool\ndescription: how `src/db/pool.rs` sizes its pool\ntype: project\n---\n\
             The pool lives in `src/db/pool.rs` (see src/lib.rs and Cargo.toml).\n\
             Schema changes go in migrations/ only.\n",
        );
        let got: Vec<(&str, bool, u32)> = t
            .iter()
            .map(|t| (t.path.as_str(), t.backticked, t.line))
            .collect();
        // The description counts (the other frontmatter keys name memories, not files).
        assert_eq!(
            got,
            [
                ("src/db/pool.rs", true, 3),
                ("src/lib.rs", false, 6),
                ("Cargo.toml", false, 6),
                ("migrations", false, 7),
            ]
        );
    }

    #[test]
    fn backticks_name_directories_and_file_names() {
        assert_eq!(
            paths("Run it from `services/server` with `config.yaml` and `.env`."),
            ["services/server", "config.yaml", ".env"]
        );
        // A word in backticks that is no path: a workflow, a command, code.
        for code in [
            "`deploy`",
            "`cargo test --workspace`",
            "`Vec<String>`",
            "`std::fs::read`",
            "`foo()`",
            "`x.unwrap()`",
            "`self.team`",
            "`--json`",
            "`$HOME/bin`",
            "`a == b`",
            "``",
            "`/`",
        ] {
            assert_eq!(one(code), None, "{code}");
        }
        // A command's file argument counts, as bare text.
        let t = one("Edit with `vim src/db/pool.rs` first.").unwrap();
        assert_eq!((t.path.as_str(), t.backticked), ("src/db/pool.rs", false));
        // Double backticks.
        assert_eq!(paths("``src/a.rs``"), ["src/a.rs"]);
        // Unclosed: plain text.
        assert_eq!(paths("a ` src/b.rs"), ["src/b.rs"]);
    }

    #[test]
    fn urls_are_not_paths() {
        for text in [
            "See https://github.com/acme/api/blob/main/src/lib.rs for it.",
            "`https://example.com/a/b.md`",
            "github.com/acme/api/src/lib.rs",
            "`docs.example.io/guide/setup.md`",
            "mailto:ops@example.com",
            "file:///etc/hosts.txt",
        ] {
            assert_eq!(paths(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn prose_with_slashes_is_not_a_path() {
        for text in [
            "Use tabs and/or spaces.",
            "the client/server split",
            "read/write access, TCP/IP, yes/no, 24/7, 1/2",
            "either/or.",
            "on 2026/11/30 we",
            "km/h",
        ] {
            assert_eq!(paths(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn version_numbers_and_abbreviations_are_not_paths() {
        for text in [
            "Upgrade to 1.2.3 or v2.0 (not 0.9).",
            "python3.11 and node 20.1",
            "`1.2.3`",
            "`v1.82.0`",
            "e.g. this, i.e. that, etc. and a.k.a. it",
            "ASP.NET and x.42",
        ] {
            assert_eq!(paths(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn home_absolute_and_parent_paths_are_not_tokens() {
        for text in [
            "never read ~/.ssh/id_rsa",
            "`~/.ssh`",
            "`/etc/passwd`",
            "/usr/local/bin/memsync.sh",
            "`../other/repo.rs`",
            "src/../secrets.txt",
            "`C:\\src\\lib.rs`",
            "`${ROOT}/src/lib.rs`",
        ] {
            assert_eq!(paths(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn globs_are_not_paths() {
        for text in [
            "`src/*.rs`",
            "every **/*.md file",
            "`tests/**`",
            "`src/{a,b}.rs`",
            "`file?.txt`",
            "`[abc].md`",
        ] {
            assert_eq!(paths(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn trailing_punctuation_and_markup_are_stripped() {
        assert_eq!(
            paths(
                "See src/lib.rs. Also (tests/sync.rs), \"docs/a.md\", **README.md**, \
                 src/main.rs: and src/x.rs; then src/y.rs! [the pool](src/db/pool.rs)"
            ),
            [
                "src/lib.rs",
                "tests/sync.rs",
                "docs/a.md",
                "README.md",
                "src/main.rs",
                "src/x.rs",
                "src/y.rs",
                "src/db/pool.rs"
            ]
        );
        // A line number or an anchor is not part of the path; `./` neither.
        assert_eq!(
            paths("`src/lib.rs:42` and src/db.rs:10:3 and docs/a.md#setup and ./scripts/test.sh"),
            ["src/lib.rs", "src/db.rs", "docs/a.md", "scripts/test.sh"]
        );
    }

    #[test]
    fn frontmatter_keys_name_memories_not_files() {
        let text = "---\nname: x\ndescription: about Cargo.toml\ntype: feedback\nsupersedes: old-rule.md\noverrides:\n  - team.md\n---\nbody\n";
        assert_eq!(paths(text), ["Cargo.toml"]);
    }

    #[test]
    fn fenced_code_counts_as_bare_text() {
        let text = "Before:\n```sh\ncargo run -p memsync -- scripts/test.sh\n`src/not_code.rs`\n```\n`src/after.rs`\n";
        let t = path_tokens(text);
        let got: Vec<(&str, bool, u32)> = t
            .iter()
            .map(|t| (t.path.as_str(), t.backticked, t.line))
            .collect();
        assert_eq!(
            got,
            [("scripts/test.sh", false, 3), ("src/after.rs", true, 6)]
        );
    }

    #[test]
    fn each_path_once_backticked_if_any_mention_is() {
        let t = path_tokens("src/a.rs here,\nthen `src/a.rs` again, and src/a.rs.\n");
        assert_eq!(
            t,
            [PathToken {
                path: "src/a.rs".into(),
                backticked: true,
                line: 1
            }]
        );
    }

    #[test]
    fn dotfiles_and_extensionless_files() {
        assert_eq!(
            paths("Edit .github/workflows/ci.yml, the Makefile and .gitignore; not .hidden."),
            [".github/workflows/ci.yml", "Makefile", ".gitignore"]
        );
    }

    #[test]
    fn every_token_is_a_named_path_the_server_accepts() {
        use crate::wire::{PushChange, PushOp, PushRequest};
        let text = "`src/db/pool.rs` src/lib.rs Cargo.toml migrations/ `services/server` \
                    .github/workflows/ci.yml `a-b_c+d/e.f` x/y/z.md `./x.rs` src/lib.rs:4";
        let tokens = paths(text);
        assert_eq!(tokens.len(), 9, "{tokens:?}");
        let req = PushRequest {
            changes: vec![PushChange {
                path: "notes.md".into(),
                op: PushOp::Put,
                base_sha256: None,
                content: Some("---\nname: n\ndescription: d\ntype: project\n---\nx\n".into()),
                named_paths: tokens,
            }],
            allow_mass_delete: false,
            allow_purged: false,
            provenance: None,
        };
        let limits = crate::policy::Limits {
            max_file_bytes: 100 * 1024,
            max_changes_per_push: 10,
        };
        assert!(crate::policy::check_batch(&req, limits).is_ok());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Whatever the text, every token is one the server takes in `named_paths`, and each
        /// path comes once.
        #[test]
        fn tokens_of_any_text_are_valid_named_paths(
            text in "([a-z./_~`*:#()\\-]{1,12}[ \n]?){0,24}"
        ) {
            let tokens = path_tokens(&text);
            let mut seen = std::collections::BTreeSet::new();
            for t in &tokens {
                proptest::prop_assert!(seen.insert(t.path.clone()), "{} twice", t.path);
                proptest::prop_assert!(t.line >= 1);
                let ok = !t.path.is_empty()
                    && t.path.len() <= MAX_PATH_BYTES
                    && !t.path.starts_with('/')
                    && !t.path.contains('\\')
                    && !t.path.contains('~')
                    && t.path.split('/').all(|s| !s.is_empty() && s != "." && s != "..");
                proptest::prop_assert!(ok, "{:?} from {:?}", t.path, text);
            }
        }
    }
}
