//! Which words changed between a removed line and the added line that
//! replaces it, so a diff can mark them more strongly than the rest of the
//! line. Pure: byte ranges in, byte ranges out.
//!
//! The work is bounded: lines longer than [`MAX_LINE_BYTES`] are not
//! compared, the diff itself has a deadline, and a pair whose lines share
//! too little is left unmarked (when most of a line was rewritten, marking
//! every word says less than the line's own tint).

use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};

/// Lines longer than this are not compared word by word.
pub(crate) const MAX_LINE_BYTES: usize = 500;
/// The time one comparison may take before it settles for a coarser answer.
const DEADLINE: Duration = Duration::from_millis(5);

/// The changed words of a pair, as byte ranges of each line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChangedWords {
    /// In the removed line.
    pub(crate) old: Vec<Range<usize>>,
    /// In the added line.
    pub(crate) new: Vec<Range<usize>>,
}

/// The changed words of `old` and of `new`, or `None` when the pair should
/// not be marked: a line too long, nothing changed, or so little in common
/// that the whole line is the change.
pub(crate) fn changed_words(old: &str, new: &str) -> Option<ChangedWords> {
    if old.len() > MAX_LINE_BYTES || new.len() > MAX_LINE_BYTES || old == new {
        return None;
    }
    let (old_tokens, new_tokens) = (tokens(old), tokens(new));
    let old_words: Vec<&str> = old_tokens.iter().map(|r| &old[r.clone()]).collect();
    let new_words: Vec<&str> = new_tokens.iter().map(|r| &new[r.clone()]).collect();
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &old_words, &new_words, Some(Instant::now() + DEADLINE));
    let (mut old_changed, mut new_changed) = (Vec::new(), Vec::new());
    let mut kept = 0usize;
    let span = |tokens: &[Range<usize>], at: usize, len: usize| tokens[at].start..tokens[at + len - 1].end;
    for op in ops {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                kept += old_words[old_index..old_index + len].iter().map(|w| w.len()).sum::<usize>();
            }
            DiffOp::Delete { old_index, old_len, .. } => old_changed.push(span(&old_tokens, old_index, old_len)),
            DiffOp::Insert { new_index, new_len, .. } => new_changed.push(span(&new_tokens, new_index, new_len)),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                old_changed.push(span(&old_tokens, old_index, old_len));
                new_changed.push(span(&new_tokens, new_index, new_len));
            }
        }
    }
    // Less than a third in common (indentation counts): the line was rewritten, not edited.
    if kept * 3 < old.len().max(new.len()) {
        return None;
    }
    Some(ChangedWords { old: merged(old_changed, old), new: merged(new_changed, new) })
}

/// Words (letters, digits, `_`), runs of spaces, and each other character alone.
fn tokens(text: &str) -> Vec<Range<usize>> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Word,
        Space,
        Other,
    }
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            Class::Word
        } else if c.is_whitespace() {
            Class::Space
        } else {
            Class::Other
        }
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut last = None;
    for (i, c) in text.char_indices() {
        let k = class(c);
        match out.last_mut() {
            Some(r) if last == Some(k) && k != Class::Other => r.end = i + c.len_utf8(),
            _ => out.push(i..i + c.len_utf8()),
        }
        last = Some(k);
    }
    out
}

/// Sorted ranges, joined where only spaces lie between them.
fn merged(mut ranges: Vec<Range<usize>>, text: &str) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(prev) if text[prev.end..r.start].trim().is_empty() => prev.end = prev.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked<'a>(text: &'a str, ranges: &[Range<usize>]) -> Vec<&'a str> {
        ranges.iter().map(|r| &text[r.clone()]).collect()
    }

    #[test]
    fn the_changed_words_of_a_pair() {
        let old = "    let table = toml::from_str(input).unwrap();";
        let new = "    let table = toml::from_str(input)?;";
        let ChangedWords { old: o, new: n } = changed_words(old, new).unwrap();
        assert_eq!(marked(old, &o), [".unwrap()"]);
        assert_eq!(marked(new, &n), ["?"]);
        let ChangedWords { old: o, new: n } =
            changed_words("fn parse(input: &str) -> Config {", "fn parse(input: &str) -> Result<Config> {").unwrap();
        assert_eq!(marked("fn parse(input: &str) -> Config {", &o), Vec::<&str>::new());
        assert_eq!(marked("fn parse(input: &str) -> Result<Config> {", &n), ["Result<", ">"]);
    }

    #[test]
    fn rewritten_long_or_equal_lines_are_not_marked() {
        assert_eq!(changed_words("alpha beta gamma", "one two three four"), None, "nothing in common");
        assert_eq!(changed_words("same", "same"), None);
        let long = "x ".repeat(MAX_LINE_BYTES);
        assert_eq!(changed_words(&long, "x"), None);
    }

    #[test]
    fn a_short_line_with_its_indentation_in_common_is_marked() {
        let ChangedWords { old: o, new: n } = changed_words("    a.unwrap()", "    a?").unwrap();
        assert_eq!(marked("    a.unwrap()", &o), [".unwrap()"]);
        assert_eq!(marked("    a?", &n), ["?"]);
    }

    #[test]
    fn spaces_between_changed_words_join_them() {
        let ChangedWords { new: n, .. } = changed_words("call(a, b, c, d)", "call(a, x y, c, d)").unwrap();
        assert_eq!(marked("call(a, x y, c, d)", &n), ["x y"]);
    }
}
