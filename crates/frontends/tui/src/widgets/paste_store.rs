//! Large pastes shown as placeholders. A paste of more than
//! [`COLLAPSE_LINES`] lines or [`COLLAPSE_CHARS`] chars is kept here and
//! the composer shows `[Pasted 40 lines]` (`[Pasted #2 12 lines]` for the
//! second one) in its place; the text is put back on submit. A placeholder
//! is edited as one unit: Backspace or Delete next to it removes it whole.

use std::ops::Range;

/// More lines than this collapse.
pub(crate) const COLLAPSE_LINES: usize = 5;
/// More chars than this collapse.
pub(crate) const COLLAPSE_CHARS: usize = 1000;

#[derive(Debug, Clone)]
struct Paste {
    placeholder: String,
    content: String,
}

/// The collapsed pastes of one composer draft.
#[derive(Debug, Clone, Default)]
pub(crate) struct PasteStore {
    pastes: Vec<Paste>,
    /// Pastes collapsed since the last clear, for numbering.
    count: usize,
}

/// Line endings made `\n`, and control characters other than newline and tab dropped.
pub(crate) fn normalize(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

/// Whether a paste is big enough to collapse.
pub(crate) fn should_collapse(text: &str) -> bool {
    text.lines().count() > COLLAPSE_LINES || text.chars().count() > COLLAPSE_CHARS
}

impl PasteStore {
    /// Keeps `content` and returns the placeholder to insert instead.
    pub(crate) fn add(&mut self, content: String) -> String {
        self.count += 1;
        let lines = content.lines().count();
        let size = if lines > COLLAPSE_LINES {
            format!("{lines} lines")
        } else {
            format!("{} chars", content.chars().count())
        };
        let placeholder =
            if self.count == 1 { format!("[Pasted {size}]") } else { format!("[Pasted #{} {size}]", self.count) };
        self.pastes.push(Paste { placeholder: placeholder.clone(), content });
        placeholder
    }

    /// Forgets every paste.
    pub(crate) fn clear(&mut self) {
        self.pastes.clear();
        self.count = 0;
    }

    /// The first occurrence of each kept paste's placeholder in `text`, in text order, without overlaps.
    pub(crate) fn placeholder_ranges(&self, text: &str) -> Vec<(Range<usize>, usize)> {
        let mut found: Vec<(Range<usize>, usize)> = self
            .pastes
            .iter()
            .enumerate()
            .filter_map(|(i, p)| text.find(&p.placeholder).map(|at| (at..at + p.placeholder.len(), i)))
            .collect();
        found.sort_by_key(|(r, _)| r.start);
        let mut end = 0;
        found.retain(|(r, _)| {
            let keep = r.start >= end;
            if keep {
                end = r.end;
            }
            keep
        });
        found
    }

    /// `text` with every placeholder replaced by its paste.
    pub(crate) fn expand(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (range, i) in self.placeholder_ranges(text) {
            out.push_str(&text[at..range.start]);
            out.push_str(&self.pastes[i].content);
            at = range.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// The placeholder that ends exactly at `pos`, if any.
    pub(crate) fn ending_at(&self, text: &str, pos: usize) -> Option<Range<usize>> {
        self.placeholder_ranges(text).into_iter().map(|(r, _)| r).find(|r| r.end == pos)
    }

    /// The placeholder that starts exactly at `pos`, if any.
    pub(crate) fn starting_at(&self, text: &str, pos: usize) -> Option<Range<usize>> {
        self.placeholder_ranges(text).into_iter().map(|(r, _)| r).find(|r| r.start == pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_placeholders_and_expands_them_in_place() {
        let mut store = PasteStore::default();
        let a = store.add("1\n2\n3\n4\n5\n6".into());
        let b = store.add("x".repeat(1200));
        assert_eq!(a, "[Pasted 6 lines]");
        assert_eq!(b, "[Pasted #2 1200 chars]");
        let text = format!("see {b} and {a}!");
        assert_eq!(store.expand(&text), format!("see {} and 1\n2\n3\n4\n5\n6!", "x".repeat(1200)));
        assert_eq!(store.ending_at(&text, 4 + b.len()), Some(4..4 + b.len()));
        assert_eq!(store.starting_at(&text, 4), Some(4..4 + b.len()));
    }

    #[test]
    fn normalizes_line_endings_and_controls() {
        assert_eq!(normalize("a\r\nb\rc\x1b[0m\td"), "a\nb\nc[0m\td");
        assert!(!should_collapse("1\n2\n3\n4\n5"));
        assert!(should_collapse("1\n2\n3\n4\n5\n6"));
    }
}
