//! Paging of search results. Results arrive per file in any order (the walk
//! is parallel); the page shown is a window `offset..offset+limit` of all
//! results sorted by path. [`PageCollector`] keeps only the files that can
//! still land in that window (and counts the rest), so memory stays bounded
//! by the window, not by the number of matches.
//!
//! Everything here is pure: plain data in, text out.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Collects per-file results, keeping the payloads of the files that can
/// still fall inside the first `offset + limit` entries in path order.
#[derive(Debug)]
pub struct PageCollector<T> {
    need: usize,
    kept: BTreeMap<PathBuf, (usize, T)>,
    kept_entries: usize,
    total_entries: usize,
    total_files: usize,
}

/// What was collected: the kept files in path order, and the totals.
#[derive(Debug)]
pub struct Collected<T> {
    /// `(path, entries, payload)` in path order; covers at least the first
    /// `offset + limit` entries when there are that many.
    pub files: Vec<(PathBuf, usize, T)>,
    /// Entries over all files, kept or not.
    pub total_entries: usize,
    /// Files with at least one entry.
    pub total_files: usize,
}

impl<T> PageCollector<T> {
    /// A collector for the window starting at `offset` of `limit` entries.
    pub fn new(offset: usize, limit: usize) -> Self {
        Self {
            need: offset.saturating_add(limit),
            kept: BTreeMap::new(),
            kept_entries: 0,
            total_entries: 0,
            total_files: 0,
        }
    }

    /// Add one file's `entries` results (files with none are not added).
    pub fn add(&mut self, path: PathBuf, entries: usize, payload: T) {
        if entries == 0 {
            return;
        }
        self.total_entries += entries;
        self.total_files += 1;
        // Past the window already: only the count matters.
        if self.kept_entries >= self.need && self.kept.last_key_value().is_some_and(|(last, _)| *last < path) {
            return;
        }
        self.kept_entries += entries;
        self.kept.insert(path, (entries, payload));
        // Drop the last files while the ones before them still fill the window.
        while let Some((_, (n, _))) = self.kept.last_key_value() {
            if self.kept_entries - n < self.need {
                break;
            }
            self.kept_entries -= n;
            self.kept.pop_last();
        }
    }

    /// The kept files in path order, with the totals.
    pub fn finish(self) -> Collected<T> {
        Collected {
            files: self.kept.into_iter().map(|(p, (n, t))| (p, n, t)).collect(),
            total_entries: self.total_entries,
            total_files: self.total_files,
        }
    }
}

/// One output line of content mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number.
    pub number: u64,
    /// Match or context.
    pub kind: LineKind,
    /// The text, without its line terminator, already cut to length.
    pub text: String,
}

/// Whether a line matched or surrounds a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// The line (or part of a multiline match) matched.
    Match,
    /// A context line (-A/-B/-C).
    Context,
}

/// A rendered window of results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The lines, joined by `\n`.
    pub text: String,
    /// Entries shown.
    pub shown: usize,
    /// Whether the byte limit (rather than `limit`) ended the page.
    pub stopped_by_bytes: bool,
}

/// Render entries `offset..offset+limit` of `items` (formatted lazily by
/// `format`, which returns the line and whether a `--` separator goes before
/// it), stopping before the text would exceed `max_bytes`. At least one
/// entry is shown when any is in the window.
pub fn paginate<I>(
    items: impl Iterator<Item = I>,
    offset: usize,
    limit: usize,
    max_bytes: usize,
    format: impl Fn(&I) -> (String, bool),
) -> Page {
    let mut text = String::new();
    let mut shown = 0;
    let mut stopped_by_bytes = false;
    for item in items.skip(offset).take(limit) {
        let (line, break_before) = format(&item);
        let sep = if shown > 0 && break_before { "\n--" } else { "" };
        let extra = sep.len() + line.len() + usize::from(shown > 0);
        if shown > 0 && text.len() + extra > max_bytes {
            stopped_by_bytes = true;
            break;
        }
        text.push_str(sep);
        if shown > 0 {
            text.push('\n');
        }
        text.push_str(&line);
        shown += 1;
    }
    Page { text, shown, stopped_by_bytes }
}

/// The line that ends a cut (or offset) page, telling the model how to go on.
pub fn notice(offset: usize, page: &Page, total: usize, max_bytes: usize) -> Option<String> {
    let end = offset + page.shown;
    if end >= total && offset == 0 {
        return None;
    }
    let why = if page.stopped_by_bytes { format!(" ({} KB limit)", max_bytes / 1024) } else { String::new() };
    Some(if end < total {
        format!(
            "[Showing results {}-{end} of {total}{why}. Use offset={end} to see more, or narrow the search with path/glob/type.]",
            offset + 1
        )
    } else {
        format!("[Showing results {}-{end} of {total}.]", offset + 1)
    })
}

/// Format a content line as ripgrep does: `path:12:text` for matches,
/// `path-12-text` for context, without the number when `numbers` is off.
pub fn content_line(path: &str, line: &Line, numbers: bool) -> String {
    let sep = match line.kind {
        LineKind::Match => ':',
        LineKind::Context => '-',
    };
    if numbers { format!("{path}{sep}{}{sep}{}", line.number, line.text) } else { format!("{path}{sep}{}", line.text) }
}

/// Decode a line of file bytes for display: the line terminator removed,
/// invalid UTF-8 replaced, and cut to `max_chars` with a marker.
pub fn display_text(bytes: &[u8], max_chars: usize) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    // Fast path: a line with no more bytes than allowed chars fits.
    if text.len() <= max_chars {
        return text.into_owned();
    }
    match text.char_indices().nth(max_chars) {
        None => text.into_owned(),
        Some((cut, _)) => format!("{} … [line cut at {max_chars} chars]", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn collect(offset: usize, limit: usize, files: &[(&str, usize)]) -> Collected<()> {
        let mut c = PageCollector::new(offset, limit);
        for (p, n) in files {
            c.add(PathBuf::from(p), *n, ());
        }
        c.finish()
    }

    fn names(c: &Collected<()>) -> Vec<String> {
        c.files.iter().map(|(p, _, _)| p.display().to_string()).collect()
    }

    #[test]
    fn collector_keeps_only_what_can_reach_the_window() {
        // Arrival order is scrambled, as with a parallel walk.
        let c = collect(0, 3, &[("d", 1), ("b", 2), ("e", 5), ("a", 1), ("c", 1)]);
        assert_eq!(names(&c), ["a", "b"]);
        assert_eq!((c.total_entries, c.total_files), (10, 5));
        let c = collect(2, 2, &[("d", 1), ("b", 2), ("e", 5), ("a", 1), ("c", 1)]);
        assert_eq!(names(&c), ["a", "b", "c"]);
    }

    #[test]
    fn collector_with_a_huge_window_keeps_everything_sorted() {
        let c = collect(0, usize::MAX, &[("b", 1), ("a", 2), ("c", 0)]);
        assert_eq!(names(&c), ["a", "b"]);
        assert_eq!((c.total_entries, c.total_files), (3, 2));
    }

    #[test]
    fn paginate_windows_and_separates_groups() {
        let items = [(1, false), (2, false), (5, true), (6, false)];
        let fmt = |i: &(u32, bool)| (format!("l{}", i.0), i.1);
        let page = paginate(items.iter().copied(), 0, 10, 1000, fmt);
        assert_eq!(page.text, "l1\nl2\n--\nl5\nl6");
        // The first line of a page never starts with a separator.
        let page = paginate(items.iter().copied(), 2, 1, 1000, fmt);
        assert_eq!(page, Page { text: "l5".into(), shown: 1, stopped_by_bytes: false });
        let page = paginate(items.iter().copied(), 0, 10, 6, fmt);
        assert_eq!(page, Page { text: "l1\nl2".into(), shown: 2, stopped_by_bytes: true });
    }

    #[test]
    fn notice_says_how_to_continue() {
        let page = Page { text: String::new(), shown: 250, stopped_by_bytes: false };
        assert_eq!(
            notice(0, &page, 1234, 50 * 1024).unwrap(),
            "[Showing results 1-250 of 1234. Use offset=250 to see more, or narrow the search with path/glob/type.]"
        );
        let page = Page { text: String::new(), shown: 10, stopped_by_bytes: true };
        assert_eq!(
            notice(250, &page, 1234, 50 * 1024).unwrap(),
            "[Showing results 251-260 of 1234 (50 KB limit). Use offset=260 to see more, or narrow the search with path/glob/type.]"
        );
        let page = Page { text: String::new(), shown: 4, stopped_by_bytes: false };
        assert_eq!(notice(0, &page, 4, 1024), None);
        assert_eq!(notice(2, &page, 6, 1024).unwrap(), "[Showing results 3-6 of 6.]");
    }

    #[test]
    fn lines_look_like_ripgrep() {
        let m = Line { number: 12, kind: LineKind::Match, text: "fn main() {".into() };
        let c = Line { number: 13, kind: LineKind::Context, text: "}".into() };
        assert_eq!(content_line("src/a.rs", &m, true), "src/a.rs:12:fn main() {");
        assert_eq!(content_line("src/a.rs", &c, true), "src/a.rs-13-}");
        assert_eq!(content_line("src/a.rs", &m, false), "src/a.rs:fn main() {");
    }

    #[test]
    fn display_text_strips_terminators_and_cuts() {
        assert_eq!(display_text(b"abc\r\n", 10), "abc");
        assert_eq!(display_text("héllo wörld\n".as_bytes(), 5), "héllo … [line cut at 5 chars]");
        assert_eq!(display_text(b"a\xffb", 10), "a\u{fffd}b");
    }
}
