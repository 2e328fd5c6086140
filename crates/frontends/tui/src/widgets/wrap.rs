//! Measuring and wrapping text by display width, the same way for every
//! widget: tabs are four columns, other control characters none, and rows
//! break after a space where they can, inside a word where they must.

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

pub(crate) use crate::wrap::measured;

/// Display width of a string as the widgets draw it (the one measure,
/// [`crate::wrap::measured`]).
pub(crate) fn str_width(s: &str) -> usize {
    crate::wrap::width(s)
}

/// Splits one line (no `\n`) into rows of at most `width` columns. The byte
/// ranges cover the line without gaps; an empty line gives one empty row.
///
/// A single space that reaches past the edge stays at the end of its row
/// (drawn in the spare column, or not at all), so a wrapped row never starts
/// with the space it broke at.
pub(crate) fn wrap_ranges(line: &str, width: usize) -> Vec<Range<usize>> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut start = 0;
    let mut col = 0;
    // Byte index just after the last space in the current row, and the column there.
    let mut last_break: Option<(usize, usize)> = None;
    for (i, g, w) in measured(line) {
        if g == " " && col == width {
            // Let the space hang past the edge; the row breaks after it.
            col += w;
            last_break = Some((i + 1, col));
            continue;
        }
        while col + w > width && i > start {
            match last_break {
                Some((b, bcol)) if b > start => {
                    rows.push(start..b);
                    start = b;
                    col -= bcol;
                }
                _ => {
                    rows.push(start..i);
                    start = i;
                    col = 0;
                }
            }
            last_break = None;
        }
        col += w;
        if g == " " || g == "\t" {
            last_break = Some((i + g.len(), col));
        }
    }
    rows.push(start..line.len());
    rows
}

/// Cuts `s` to at most `width` columns, ending with `…` when something was cut.
pub(crate) fn truncate(s: &str, width: usize) -> String {
    if str_width(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut col = 0;
    for (_, g, w) in measured(s) {
        if col + w > width - 1 {
            break;
        }
        out.push_str(g);
        col += w;
    }
    out.push('…');
    out
}

/// Wraps styled text into lines of at most `width` columns. The first row
/// starts with `first`, the others with `rest` (a hanging indent); both are
/// counted in the width. Newlines in the segments start new rows.
pub(crate) fn wrap_spans(
    segments: &[(&str, Style)],
    width: usize,
    first: Span<'static>,
    rest: Span<'static>,
) -> Vec<Line<'static>> {
    let text: String = segments.iter().map(|(s, _)| *s).collect();
    // Byte ranges of each segment in `text`, with its style.
    let mut styled = Vec::with_capacity(segments.len());
    let mut at = 0;
    for (s, style) in segments {
        styled.push((at..at + s.len(), *style));
        at += s.len();
    }
    let indent = str_width(&first.content).max(str_width(&rest.content));
    let avail = width.saturating_sub(indent).max(1);
    let mut lines = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        for row in wrap_ranges(line, avail) {
            let (a, b) = (line_start + row.start, line_start + row.end);
            let prefix = if lines.is_empty() { first.clone() } else { rest.clone() };
            let mut spans = vec![prefix];
            for (range, style) in &styled {
                let (s, e) = (range.start.max(a), range.end.min(b));
                if s < e {
                    spans.push(Span::styled(text[s..e].replace('\t', "    "), *style));
                }
            }
            lines.push(Line::from(spans));
        }
        line_start += line.len() + 1;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_emoji_are_one_cluster_as_wide_as_drawn() {
        let family = "👨\u{200d}👩\u{200d}👧";
        assert_eq!(str_width(family), crate::wrap::width(family));
        assert_eq!(str_width(family), 2);
        // Never split inside the cluster.
        let line = format!("{family}{family}{family}");
        for r in wrap_ranges(&line, 3) {
            assert_eq!(line[r].chars().count() % 5, 0);
        }
        assert_eq!(str_width("a\tb"), 6);
    }

    fn rows(line: &str, width: usize) -> Vec<&str> {
        wrap_ranges(line, width).into_iter().map(|r| &line[r]).collect()
    }

    #[test]
    fn breaks_after_spaces_and_inside_long_words() {
        assert_eq!(rows("hello world foo", 8), ["hello ", "world ", "foo"]);
        assert_eq!(rows("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(rows("", 4), [""]);
        // The space at the edge hangs; the next row starts with the word.
        assert_eq!(rows("abcd efgh", 4), ["abcd ", "efgh"]);
    }

    #[test]
    fn counts_wide_chars_and_tabs() {
        assert_eq!(rows("日本語です", 4), ["日本", "語で", "す"]);
        assert_eq!(str_width("a\tb"), 6);
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hello", 5), "hello");
    }

    #[test]
    fn wraps_styled_segments_with_a_hanging_indent() {
        let plain = Style::new();
        let lines = wrap_spans(&[("one two ", plain), ("three", plain)], 8, Span::raw("- "), Span::raw("  "));
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["- one ", "  two ", "  three"]);
    }
}
