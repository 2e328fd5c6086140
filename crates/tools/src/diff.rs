//! Diffs of file changes: a compact unified diff for the model and a
//! structured form (hunks of tagged lines) for front ends.

use std::time::{Duration, Instant};

use similar::{Algorithm, ChangeTag, TextDiff};
pub use tern_protocol::{DiffLine, Hunk};

/// Bytes of diff shown to the model at most.
pub const MAX_DIFF_BYTES: usize = 8 * 1024;

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

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The most time a diff may take: past it, the rest of the change is shown
/// as removed and added whole (a correct, if longer, diff). Keeps an
/// overwrite of a big file with different content from spinning.
const DEADLINE: Duration = Duration::from_millis(150);

/// The most diff lines kept: a bigger change is summed up in its counts
/// (the model and front ends get "N lines changed", not megabytes of diff).
pub const MAX_DIFF_LINES: usize = 20_000;

/// Diff `old` against `new` for the file shown as `name`. The common
/// prefix and suffix are cut off first (keeping the context lines), so the
/// cost follows the size of the change, not of the file.
pub fn diff_summary(old: &str, new: &str, name: &str) -> DiffSummary {
    diff_from_line(0, old, new, name)
}

/// What a series of changes to a text replaced, without a copy of the
/// whole old text: the original bytes of the one span that holds every
/// change, and where that span now is. An edit of a large file keeps this
/// instead of the file's old copy.
#[derive(Debug, Clone, Default)]
pub struct ChangedSpan {
    /// Where the span starts (the text before it is unchanged).
    start: usize,
    /// Bytes after the span, unchanged.
    tail: usize,
    /// The span's original text; `None` until something changed.
    old: Option<String>,
}

impl ChangedSpan {
    /// `text[a..b]` is about to be replaced (both char boundaries).
    pub fn replacing(&mut self, text: &str, a: usize, b: usize) {
        let len = text.len();
        match &mut self.old {
            None => {
                self.old = Some(text[a..b].to_string());
                (self.start, self.tail) = (a, len - b);
            }
            Some(old) => {
                // Bytes outside the span are still the original's.
                let end = len - self.tail;
                let (start, new_end) = (self.start.min(a), end.max(b));
                let mut grown = String::with_capacity(old.len() + (self.start - start) + (new_end - end));
                grown.push_str(&text[start..self.start]);
                grown.push_str(old);
                grown.push_str(&text[end..new_end]);
                *old = grown;
                (self.start, self.tail) = (start, len - new_end);
            }
        }
    }

    /// `before` became `after` in one step (a change built as a new text):
    /// the span of it that differs, from their common start and end.
    pub fn rewritten(&mut self, before: &str, after: &str) {
        let (bb, ab) = (before.as_bytes(), after.as_bytes());
        let mut prefix = bb.iter().zip(ab).take_while(|(x, y)| x == y).count();
        while !before.is_char_boundary(prefix) || !after.is_char_boundary(prefix) {
            prefix -= 1;
        }
        let room = bb.len().min(ab.len()) - prefix;
        let mut suffix = bb.iter().rev().zip(ab.iter().rev()).take(room).take_while(|(x, y)| x == y).count();
        while !before.is_char_boundary(bb.len() - suffix) || !after.is_char_boundary(ab.len() - suffix) {
            suffix -= 1;
        }
        // The bytes after the span are the same in both, so it stays valid for `after`.
        self.replacing(before, prefix, bb.len() - suffix);
    }

    /// The diff of the original against `text` (its state now): the
    /// span with its context lines, numbered as in the whole file. Changes
    /// among identical lines may be placed differently than a whole-file
    /// diff would place them; the counts are the same.
    pub fn diff(&self, text: &str, name: &str) -> DiffSummary {
        let Some(old) = &self.old else {
            return diff_summary("", "", name);
        };
        let end = text.len() - self.tail;
        let bytes = text.as_bytes();
        // CONTEXT + 1 whole lines each side: trimming keeps CONTEXT of them.
        let mut from = bytes[..self.start].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        for _ in 0..=CONTEXT {
            if from == 0 {
                break;
            }
            from = bytes[..from - 1].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        }
        let mut to = end;
        for _ in 0..=CONTEXT + 1 {
            if to >= bytes.len() {
                break;
            }
            to = memchr::memchr(b'\n', &bytes[to..]).map_or(bytes.len(), |i| to + i + 1);
        }
        let mut old_window = String::with_capacity(old.len() + (self.start - from) + (to - end));
        old_window.push_str(&text[from..self.start]);
        old_window.push_str(old);
        old_window.push_str(&text[end..to]);
        let skip = memchr::memchr_iter(b'\n', &bytes[..from]).count();
        diff_from_line(skip, &old_window, &text[from..to], name)
    }
}

/// [`diff_summary`] of two texts that start after `base` lines of the file.
fn diff_from_line(base: usize, old: &str, new: &str, name: &str) -> DiffSummary {
    let (skip, old_mid, new_mid) = trim_common(old, new);
    let skip = skip + base;
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(Instant::now() + DEADLINE)
        .diff_lines(old_mid, new_mid);
    let mut hunks = Vec::new();
    let (mut added, mut removed) = (0, 0);
    let mut unified = String::new();
    // git-style a/ b/ prefixes only for workspace-relative paths.
    if name.starts_with('/') {
        unified.push_str(&format!("--- {name}\n+++ {name}\n"));
    } else {
        unified.push_str(&format!("--- a/{name}\n+++ b/{name}\n"));
    }
    let groups = diff.grouped_ops(CONTEXT);
    // Too big to show: counts only.
    let shown: usize = groups.iter().flatten().map(|op| op.old_range().len().max(op.new_range().len())).sum();
    if shown > MAX_DIFF_LINES {
        for op in groups.iter().flatten() {
            for change in diff.iter_changes(op) {
                match change.tag() {
                    ChangeTag::Insert => added += 1,
                    ChangeTag::Delete => removed += 1,
                    ChangeTag::Equal => {}
                }
            }
        }
        unified.push_str(&format!("@@ {removed} lines removed, {added} lines added (too large to show) @@\n"));
        return DiffSummary { unified, hunks, added, removed };
    }
    for group in groups {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let mut lines = Vec::new();
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
                lines.push(DiffLine {
                    tag,
                    old: change.old_index().map(|i| i + 1 + skip),
                    new: change.new_index().map(|i| i + 1 + skip),
                    text: change.value().trim_end_matches(['\n', '\r']).to_string(),
                });
            }
        }
        let start = |r: &std::ops::Range<usize>| if r.is_empty() { r.start + skip } else { r.start + skip + 1 };
        unified.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            start(&old_range),
            old_range.len(),
            start(&new_range),
            new_range.len()
        ));
        for l in &lines {
            unified.push(l.tag);
            unified.push_str(&l.text);
            unified.push('\n');
        }
        hunks.push(Hunk { old_start: start(&old_range), new_start: start(&new_range), lines });
    }
    if hunks.is_empty() {
        unified.clear();
    }
    DiffSummary { unified, hunks, added, removed }
}

/// Cut the common prefix and suffix down to whole lines, keeping
/// [`CONTEXT`] lines of each. Returns the lines skipped at the start and the
/// two middles.
fn trim_common<'a>(old: &'a str, new: &'a str) -> (usize, &'a str, &'a str) {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let prefix = ob.iter().zip(nb).take_while(|(a, b)| a == b).count();
    // Start of the line holding the first difference, then CONTEXT lines up.
    let mut start = ob[..prefix].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    for _ in 0..CONTEXT {
        if start == 0 {
            break;
        }
        start = ob[..start - 1].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    }
    let max_suffix = (ob.len() - start).min(nb.len() - start);
    let suffix = ob.iter().rev().zip(nb.iter().rev()).take(max_suffix).take_while(|(a, b)| a == b).count();
    // The suffix must begin at a line start; then keep CONTEXT lines of it.
    let mut old_end = ob.len() - suffix;
    if old_end > start && ob[old_end - 1] != b'\n' {
        old_end = ob[old_end..].iter().position(|b| *b == b'\n').map_or(ob.len(), |i| old_end + i + 1);
    }
    for _ in 0..CONTEXT {
        if old_end >= ob.len() {
            break;
        }
        old_end = ob[old_end..].iter().position(|b| *b == b'\n').map_or(ob.len(), |i| old_end + i + 1);
    }
    let new_end = nb.len() - (ob.len() - old_end);
    let skip = memchr::memchr_iter(b'\n', &ob[..start]).count();
    // Boundaries sit just after a newline (or at the ends), so they are char boundaries.
    match (old.get(start..old_end), new.get(start..new_end)) {
        (Some(o), Some(n)) => (skip, o, n),
        _ => (0, old, new),
    }
}

/// The diff cut to [`MAX_DIFF_BYTES`] at a line boundary, with a notice.
pub fn bounded(unified: &str) -> String {
    if unified.len() <= MAX_DIFF_BYTES {
        return unified.to_string();
    }
    let cut = tern_protocol::text::prefix_within(unified, MAX_DIFF_BYTES).rfind('\n').unwrap_or(0);
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
    fn trimming_keeps_line_numbers_and_context() {
        let old: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 500\n", "line five hundred\n");
        let d = diff_summary(&old, &new, "big.txt");
        assert_eq!(
            d.unified,
            "--- a/big.txt\n+++ b/big.txt\n@@ -497,7 +497,7 @@\n line 497\n line 498\n line 499\n-line 500\n+line five hundred\n line 501\n line 502\n line 503\n"
        );
        let d = diff_summary("a\n", "a\nb\n", "f");
        assert_eq!(d.unified, "--- a/f\n+++ b/f\n@@ -1,1 +1,2 @@\n a\n+b\n");
        let d = diff_summary("", "x\n", "f");
        assert_eq!(d.unified, "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+x\n");
        assert_eq!(diff_summary("same\n", "same\n", "f").unified, "");
        let d = diff_summary("é1\né2\n", "é1\néX\n", "f");
        assert_eq!(d.hunks[0].lines.iter().map(|l| l.tag).collect::<String>(), " -+");
    }

    #[test]
    fn a_rewrite_of_a_big_file_is_quick_and_summed_up() {
        let old: String = (0..100_000).map(|i| format!("old line {i} with some text\n")).collect();
        let new: String = (0..20_000).map(|i| format!("new line {i} other words\n")).collect();
        let started = std::time::Instant::now();
        let d = diff_summary(&old, &new, "big.txt");
        // Bounded by the deadline plus linear work (generous for a loaded debug build).
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!((d.added, d.removed), (20_000, 100_000));
        assert!(d.hunks.is_empty());
        assert!(d.unified.contains("100000 lines removed, 20000 lines added (too large to show)"), "{}", d.unified);
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
