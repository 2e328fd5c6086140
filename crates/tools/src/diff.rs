//! Diffs of file changes: a compact unified diff for the model and a
//! structured form (hunks of tagged lines) for front ends.

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

/// Bytes of diff shown to the model at most.
pub const MAX_DIFF_BYTES: usize = 8 * 1024;

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    /// `+`, `-` or ` `.
    pub tag: char,
    /// Old line number (context and removed lines).
    pub old: Option<usize>,
    /// New line number (context and added lines).
    pub new: Option<usize>,
    /// The text, without its newline.
    pub text: String,
}

/// A group of nearby changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// First old line (1-based).
    pub old_start: usize,
    /// First new line (1-based).
    pub new_start: usize,
    /// Its lines.
    pub lines: Vec<DiffLine>,
}

/// Both forms plus line counts.
#[derive(Debug, Clone)]
pub struct DiffSummary {
    /// Unified diff with 3 lines of context.
    pub unified: String,
    /// Structured hunks.
    pub hunks: Vec<Hunk>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// Diff `old` against `new` for the file shown as `name`.
pub fn diff_summary(old: &str, new: &str, name: &str) -> DiffSummary {
    let diff = TextDiff::from_lines(old, new);
    // git-style a/ b/ prefixes only for workspace-relative paths.
    let (a, b) = if name.starts_with('/') {
        (name.to_string(), name.to_string())
    } else {
        (format!("a/{name}"), format!("b/{name}"))
    };
    let unified = diff.unified_diff().context_radius(3).header(&a, &b).to_string();
    let mut hunks = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for group in diff.grouped_ops(3) {
        let mut lines = Vec::new();
        let (mut old_start, mut new_start) = (None, None);
        for op in &group {
            for change in diff.iter_changes(op) {
                let tag = match change.tag() {
                    ChangeTag::Insert => {
                        added += 1;
                        '+'
                    }
                    ChangeTag::Delete => {
                        removed += 1;
                        '-'
                    }
                    ChangeTag::Equal => ' ',
                };
                let old = change.old_index().map(|i| i + 1);
                let new = change.new_index().map(|i| i + 1);
                old_start = old_start.or(old);
                new_start = new_start.or(new);
                lines.push(DiffLine { tag, old, new, text: change.value().trim_end_matches(['\n', '\r']).to_string() });
            }
        }
        hunks.push(Hunk { old_start: old_start.unwrap_or(0), new_start: new_start.unwrap_or(0), lines });
    }
    DiffSummary { unified, hunks, added, removed }
}

/// The diff cut to [`MAX_DIFF_BYTES`] at a line boundary, with a notice.
pub fn bounded(unified: &str) -> String {
    if unified.len() <= MAX_DIFF_BYTES {
        return unified.to_string();
    }
    let cut = unified[..MAX_DIFF_BYTES].rfind('\n').unwrap_or(0);
    format!(
        "{}\n[diff cut at {} KB of {} KB; read the file to see the rest]",
        &unified[..cut],
        MAX_DIFF_BYTES / 1024,
        unified.len() / 1024
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_and_structured_agree() {
        let d = diff_summary("a\nb\nc\n", "a\nB\nc\nd\n", "f.txt");
        assert_eq!(d.unified, "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n");
        assert_eq!((d.added, d.removed), (2, 1));
        assert_eq!(d.hunks.len(), 1);
        let tags: String = d.hunks[0].lines.iter().map(|l| l.tag).collect();
        assert_eq!(tags, " -+ +");
        assert_eq!(d.hunks[0].lines[2], DiffLine { tag: '+', old: None, new: Some(2), text: "B".into() });
    }

    #[test]
    fn long_diffs_are_bounded() {
        let old: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let d = diff_summary(&old, "", "big");
        let b = bounded(&d.unified);
        assert!(b.len() < MAX_DIFF_BYTES + 200);
        assert!(b.ends_with("read the file to see the rest]"));
    }
}
