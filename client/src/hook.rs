//! The session-start hook's context: what memsync tells the agent at the start of a session.
//! (The `SessionEnd` hook prints nothing: it pushes.) Each agent's adapter wraps it in the
//! output its hooks expect (`crate::agent`).

use std::path::Path;

use crate::state::State;

/// What agents load of an index: the first 200 lines and 25,000 bytes.
pub fn index_budget(text: &str) -> (String, bool) {
    let mut out = String::new();
    let mut truncated = false;
    for (i, line) in text.lines().enumerate() {
        if i >= memsync_core::index::MAX_LINES
            || out.len() + line.len() + 1 > memsync_core::index::MAX_BYTES
        {
            truncated = true;
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    (out, truncated)
}

fn age_days(updated_at: &str, now: chrono::DateTime<chrono::Utc>) -> Option<i64> {
    let t = chrono::DateTime::parse_from_rfc3339(updated_at).ok()?;
    Some((now - t.with_timezone(&chrono::Utc)).num_days())
}

/// Related private/team pairs listed at session start, most likely contradictions first. For
/// users of 10 private memories against every team memory, 8 bring 0.685 of the labelled
/// contradictions to the agent in 12.4 lines a session on the development evaluation set and
/// 0.791 in 11.6 on the second held-out set (`memsync-feedback-eval --set dev`; docs/client.md).
pub const RELATED_NOTICE_CAP: usize = 8;

/// The pairs the detector found on one subject but could not call contradictions: the agent,
/// which reads both memories, judges them; the team memory wins unless the private one says
/// `overrides:`.
fn related_notice(c: &mut String, feedback: &[crate::feedback::PrivateConflict]) {
    let mut related: Vec<&crate::feedback::PrivateConflict> =
        feedback.iter().filter(|f| f.kind == "related").collect();
    if related.is_empty() {
        return;
    }
    related.sort_by(|x, y| {
        y.likelihood
            .cmp(&x.likelihood)
            .then_with(|| (&x.private, &x.team).cmp(&(&y.private, &y.team)))
    });
    c.push_str(
        "Private and team feedback on the same subject (check each pair; where they disagree the team memory wins unless the private memory says `overrides: <team path>`):\n",
    );
    for f in related.iter().take(RELATED_NOTICE_CAP) {
        let reason: String = f.reason.chars().take(160).collect();
        let cut = if reason.len() < f.reason.len() {
            "…"
        } else {
            ""
        };
        c.push_str(&format!(
            "- private {} / team {}: {reason}{cut}\n",
            f.private, f.team
        ));
    }
    if related.len() > RELATED_NOTICE_CAP {
        c.push_str(&format!(
            "- and {} more pairs (`memsync check` lists them all)\n",
            related.len() - RELATED_NOTICE_CAP
        ));
    }
}

/// The dirs the context names.
#[derive(Debug, Clone, Copy)]
pub struct Dirs<'a> {
    pub team_dir: &'a Path,
    /// Named for agents that do not know their private memory dir by themselves (every agent
    /// but Claude Code, whose own dir it is).
    pub private_dir: Option<&'a Path>,
}

/// The context for the agent. `sync_note` is one line about this session's pull (None when it
/// went through); `notices` are lines about the user's proposals and possibly stale memories.
#[allow(clippy::too_many_arguments)]
pub fn context(
    project: &str,
    dirs: Dirs<'_>,
    state: &State,
    index: Option<&str>,
    sync_note: Option<&str>,
    feedback: &[crate::feedback::PrivateConflict],
    notices: &[String],
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    let mut c = String::new();
    let private = match dirs.private_dir {
        Some(p) => format!("personal notes go in {} (never shared)", p.display()),
        None => "personal notes stay in your private memory dir".to_owned(),
    };
    c.push_str(&format!(
        "Team memory for project {project} is in {} (synced by memsync, revision {}). \
         Its files are shared with everyone on the project: save project-wide knowledge there \
         (name: / description: / type: frontmatter, plus an entry in its MEMORY.md); \
         {private}. Changes are pushed when the session ends.\n",
        dirs.team_dir.display(),
        state.revision
    ));
    if let Some(note) = sync_note {
        c.push_str(note.trim());
        c.push('\n');
    }
    for (path, conflict) in &state.conflicts {
        c.push_str(&format!(
            "Conflict in team memory {path} ({}): the local file is kept; the user settles it with `memsync resolve {path} --take local|server|merged`.\n",
            conflict.reason
        ));
    }
    for f in feedback.iter().filter(|f| f.kind == "contradiction") {
        c.push_str(&format!(
            "Feedback conflict: the team rule {} wins over the private memory {} ({}); follow the team rule, and fix {} or mark it `overrides: {}`.\n",
            f.team, f.private, f.reason, f.private, f.team
        ));
    }
    related_notice(&mut c, feedback);
    for (path, r) in &state.refused {
        c.push_str(&format!(
            "Not shared with the team: {path} ({}: {}).\n",
            r.rule, r.message
        ));
    }
    for line in notices {
        c.push_str(line.trim_end());
        c.push('\n');
    }
    let mut old: Vec<(i64, &str)> = state
        .files
        .iter()
        .filter(|(p, _)| !p.ends_with("MEMORY.md"))
        .filter_map(|(p, t)| Some((age_days(t.updated_at.as_deref()?, now)?, p.as_str())))
        .filter(|(d, _)| *d >= 1)
        .collect();
    if !old.is_empty() {
        old.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let shown: Vec<String> = old
            .iter()
            .take(15)
            .map(|(d, p)| format!("{p} ({d} day{})", if *d == 1 { "" } else { "s" }))
            .collect();
        let more = if old.len() > 15 {
            format!(" and {} more", old.len() - 15)
        } else {
            String::new()
        };
        c.push_str(&format!(
            "Last changed over a day ago (check before relying on them): {}{more}.\n",
            shown.join(", ")
        ));
    }
    match index {
        Some(text) if !text.trim().is_empty() => {
            let (shown, truncated) = index_budget(text);
            c.push_str("\nContents of the team MEMORY.md:\n");
            c.push_str(&shown);
            if truncated {
                c.push_str("(truncated to the first 200 lines / 25,000 bytes)\n");
            }
        }
        _ => c.push_str("The team MEMORY.md is empty so far.\n"),
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{ConflictRecord, Tracked};

    #[test]
    fn context_names_dir_conflicts_ages_and_index() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let mut st = State {
            revision: 7,
            ..State::default()
        };
        let sha = memsync_core::Sha256::of(b"x");
        st.files.insert(
            "old.md".into(),
            Tracked {
                sha256: sha,
                updated_at: Some("2026-11-20T12:00:00Z".into()),
                author: None,
                named_paths: Vec::new(),
                stamp: None,
            },
        );
        st.files.insert(
            "new.md".into(),
            Tracked {
                sha256: sha,
                updated_at: Some("2026-11-30T11:00:00Z".into()),
                author: None,
                named_paths: Vec::new(),
                stamp: None,
            },
        );
        st.conflicts.insert(
            "x.md".into(),
            ConflictRecord {
                reason: "overlapping_edit".into(),
                server_sha256: None,
                local_sha256: None,
                at: String::new(),
            },
        );
        let fb = vec![crate::feedback::PrivateConflict {
            private: "mine.md".into(),
            team: "testing.md".into(),
            kind: "contradiction".into(),
            reason: "both about the database in tests".into(),
            likelihood: 1000,
        }];
        let c = context(
            "acme/api",
            Dirs {
                team_dir: Path::new("/t/team"),
                private_dir: None,
            },
            &st,
            Some("- [A](a.md) — a\n"),
            Some("memsync: offline"),
            &fb,
            &["memsync: your proposal `p.md` (#3) waits for review".to_owned()],
            now,
        );
        assert!(
            c.contains("the team rule testing.md wins over the private memory mine.md"),
            "{c}"
        );
        assert!(c.contains("/t/team") && c.contains("revision 7"));
        assert!(c.contains("memsync: offline"));
        assert!(c.contains("Conflict in team memory x.md"));
        assert!(c.contains("old.md (10 days)") && !c.contains("new.md ("));
        assert!(c.contains("- [A](a.md) — a"));
        assert!(c.contains("memsync: your proposal `p.md` (#3) waits for review\n"));
    }

    #[test]
    fn related_pairs_are_listed_most_likely_first_and_capped() {
        let pair = |i: u32| crate::feedback::PrivateConflict {
            private: format!("p{i}.md"),
            team: format!("t{i}.md"),
            kind: "related".into(),
            reason: format!("both about subject {i}; no opposing directives"),
            likelihood: i * 10,
        };
        let fb: Vec<_> = (1..=12).map(pair).collect();
        let mut c = String::new();
        related_notice(&mut c, &fb);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 1 + RELATED_NOTICE_CAP + 1, "{c}");
        assert!(lines[0].contains("team memory wins unless the private memory says `overrides:"));
        assert!(lines[1].starts_with("- private p12.md / team t12.md: both about subject 12"));
        assert!(lines[RELATED_NOTICE_CAP].contains("p5.md"), "{c}");
        assert!(!c.contains("p4.md /"), "{c}");
        assert!(
            lines[RELATED_NOTICE_CAP + 1].contains("and 4 more pairs"),
            "{c}"
        );
        let mut none = String::new();
        related_notice(&mut none, &fb[..0]);
        assert!(none.is_empty());
    }

    #[test]
    fn index_is_cut_to_the_budget() {
        let long: String = (0..300)
            .map(|i| format!("- [n{i}](n{i}.md) — note\n"))
            .collect();
        let (shown, cut) = index_budget(&long);
        assert!(cut);
        assert_eq!(shown.lines().count(), 200);
        let wide = "x".repeat(140) + "\n";
        let (shown, cut) = index_budget(&wide.repeat(190));
        assert!(cut && shown.len() <= 25_000);
    }
}
