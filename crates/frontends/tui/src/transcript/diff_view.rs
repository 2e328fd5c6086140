//! File changes as diff rows with line numbers, from the `hunks` (or,
//! failing that, the unified `diff`) that edit and write return in their
//! details, or from a permission question's preview: one renderer for both.
//!
//! Added and removed lines sit on a tinted background (the theme's, for the
//! terminal's colour depth), their text coloured by the file's language,
//! and where a removed line is followed by the line that replaces it, the
//! words that changed get a stronger tint. The work is bounded: past
//! [`MAX_HIGHLIGHTED_LINES`] lines, or on lines longer than
//! [`MAX_HIGHLIGHTED_LINE_BYTES`], the text keeps the plain diff colour;
//! word marks are limited by [`word_diff`]'s own bounds and
//! [`MAX_WORD_PAIRS`].

use std::borrow::Cow;
use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::cell::Ctx;
use super::span_marks::mark_ranges;
use super::word_diff;
use crate::markdown::FileHighlighter;
use crate::sanitize;
use crate::theme::Theme;
use crate::wrap::{self, Break};

/// Lines of one change coloured by their language; the rest stay plain.
pub(crate) const MAX_HIGHLIGHTED_LINES: usize = 400;
/// Longer lines are not coloured by language (a minified file's one line).
pub(crate) const MAX_HIGHLIGHTED_LINE_BYTES: usize = 1_000;
/// Removed/added pairs of one change compared word by word.
pub(crate) const MAX_WORD_PAIRS: usize = 1_000;

/// One row of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DiffRow {
    /// A line: `+`, `-` or ` `, with its old and new line numbers.
    Line { tag: char, old: Option<u64>, new: Option<u64>, text: String },
    /// Lines left out between two hunks.
    Gap,
}

/// The rows of a file change a tool made: its hunks when present, else the
/// unified diff text.
pub(crate) fn from_details(details: &tern_protocol::ToolDetails) -> Option<Vec<DiffRow>> {
    let change = details.file_change()?;
    if !change.hunks.is_empty() {
        let mut rows = Vec::new();
        for (i, hunk) in change.hunks.iter().enumerate() {
            if i > 0 {
                rows.push(DiffRow::Gap);
            }
            rows.extend(hunk.lines.iter().map(|l| DiffRow::Line {
                tag: l.tag,
                old: l.old.map(|n| n as u64),
                new: l.new.map(|n| n as u64),
                text: l.text.clone(),
            }));
        }
        return Some(rows);
    }
    Some(change.diff.as_str()).filter(|d| !d.is_empty()).map(from_unified)
}

/// Rows of a unified diff, numbered from its `@@` headers.
pub(crate) fn from_unified(diff: &str) -> Vec<DiffRow> {
    let mut rows = Vec::new();
    let (mut old, mut new) = (0u64, 0u64);
    let mut hunks = 0;
    for line in diff.lines() {
        if line.starts_with("--- ") || line.starts_with("+++ ") {
            continue;
        }
        if let Some(header) = line.strip_prefix("@@") {
            let mut nums = header.split_whitespace().filter_map(|part| {
                let digits = part.trim_start_matches(['-', '+']).split(',').next()?;
                digits.parse::<u64>().ok()
            });
            old = nums.next().unwrap_or(0);
            new = nums.next().unwrap_or(0);
            if hunks > 0 {
                rows.push(DiffRow::Gap);
            }
            hunks += 1;
            continue;
        }
        let (tag, text) = match line.chars().next() {
            Some(c @ ('+' | '-' | ' ')) => (c, &line[1..]),
            _ => (' ', line),
        };
        let (o, n) = match tag {
            '+' => (None, Some(new)),
            '-' => (Some(old), None),
            _ => (Some(old), Some(new)),
        };
        if tag != '+' {
            old += 1;
        }
        if tag != '-' {
            new += 1;
        }
        rows.push(DiffRow::Line { tag, old: o, new: n, text: text.to_string() });
    }
    rows
}

/// A new file's content as added rows (at most `max` of them).
pub(crate) fn added(content: &str, max: usize) -> Vec<DiffRow> {
    content
        .lines()
        .take(max)
        .enumerate()
        .map(|(i, l)| DiffRow::Line { tag: '+', old: None, new: Some(i as u64 + 1), text: l.to_string() })
        .collect()
}

/// Draw `rows` of the file at `path`, at most `limit` of them (then a "… N
/// more lines" row), for a cell of the transcript.
pub(crate) fn render(
    rows: &[DiffRow],
    path: Option<&str>,
    limit: Option<usize>,
    total: usize,
    ctx: &Ctx<'_>,
) -> Vec<Line<'static>> {
    let shown = limit.map_or(rows.len(), |l| l.min(rows.len()));
    let mut out = render_rows(&rows[..shown], path, ctx.width, ctx.theme);
    if total > shown {
        let more = super::units::count((total - shown) as u64, "more line", "more lines");
        out.push(Line::from(Span::styled(format!("  … {more} (Ctrl+O)"), ctx.theme.dim())));
    }
    out
}

/// Every row of a change at `width` columns: line numbers, `+`/`-`, the
/// text wrapped (continued rows start with `↪`), tinted, coloured by the
/// language of `path`, changed words marked.
pub(crate) fn render_rows(rows: &[DiffRow], path: Option<&str>, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    render_styled(rows, &DiffStyling::of(rows, path, theme), width, theme)
}

/// What colours a change beyond its tint, worked out once whatever the
/// width: each line's language colours and its changed words.
#[derive(Debug, Default)]
pub(crate) struct DiffStyling {
    /// Per row: the line's spans coloured by its language, or `None`.
    syntax: Vec<Option<Vec<Span<'static>>>>,
    /// Per row: the byte ranges of its changed words.
    words: Vec<Vec<Range<usize>>>,
}

impl DiffStyling {
    /// The styling of `rows` of the file at `path` with `theme`.
    pub(crate) fn of(rows: &[DiffRow], path: Option<&str>, theme: &Theme) -> Self {
        let texts: Vec<Cow<'_, str>> = rows.iter().map(row_text).collect();
        // Language colours need the tint to tell added from removed; without
        // one (sixteen colours) the lines keep their red and green.
        let tinted = theme.diff_add_line() != Style::new();
        let mut syntax = if tinted { highlighted(rows, &texts, path) } else { Vec::new() };
        syntax.resize(rows.len(), None);
        let words = if theme.color { word_marks(rows, &texts) } else { vec![Vec::new(); rows.len()] };
        Self { syntax, words }
    }

    /// What of `theme` the styling depends on: themes with the same key share it.
    pub(crate) fn key(theme: &Theme) -> StylingKey {
        StylingKey { color: theme.color, tinted: theme.diff_add_line() != Style::new() }
    }
}

/// What of a theme a [`DiffStyling`] depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StylingKey {
    color: bool,
    tinted: bool,
}

/// A row's text as drawn: control characters made visible, tabs expanded.
fn row_text(row: &DiffRow) -> Cow<'_, str> {
    match row {
        DiffRow::Line { text, .. } => sanitize::clean(text),
        DiffRow::Gap => Cow::Borrowed(""),
    }
}

/// [`render_rows`] with the styling worked out already.
pub(crate) fn render_styled(
    rows: &[DiffRow],
    styling: &DiffStyling,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let highest = rows
        .iter()
        .filter_map(|r| match r {
            DiffRow::Line { old, new, .. } => new.or(*old),
            DiffRow::Gap => None,
        })
        .max();
    // Rows without numbers (an edit whose file was not read) get no number column.
    let digits = highest.map_or(0, |n| n.to_string().len());
    let gutter = if digits == 0 { 2 } else { digits + 3 };
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let DiffRow::Line { tag, old, new, .. } = row else {
            out.push(Line::from(vec![Span::raw(" ".repeat(gutter)), Span::styled("⋮", theme.dim())]));
            continue;
        };
        let (fg, tint, word_tint) = match tag {
            '+' => (theme.diff_add(), theme.diff_add_line(), theme.diff_add_word()),
            '-' => (theme.diff_remove(), theme.diff_remove_line(), theme.diff_remove_word()),
            _ => (theme.text(), Style::new(), Style::new()),
        };
        let number = if *tag == '-' { *old } else { new.or(*old) };
        let number = number.map_or_else(String::new, |n| n.to_string());
        let number = if digits == 0 { "  ".to_string() } else { format!("  {number:>digits$} ") };
        let first =
            Line::from(vec![Span::styled(number, theme.dim()), Span::styled(format!("{tag} "), tint.patch(fg))]);
        let rest = Line::from(vec![Span::raw(" ".repeat(gutter)), Span::styled("↪ ", tint.patch(theme.dim()))]);
        // Context lines keep the terminal's colour; changed ones the diff's, unless the language colours them.
        let spans = styling
            .syntax
            .get(i)
            .cloned()
            .flatten()
            .unwrap_or_else(|| vec![Span::styled(row_text(row).into_owned(), fg)]);
        let marks = styling.words.get(i).map_or(&[][..], Vec::as_slice);
        let body: Vec<Span<'static>> = mark_ranges(spans, marks, word_tint)
            .into_iter()
            .map(|s| Span::styled(s.content, tint.patch(s.style)))
            .collect();
        for mut line in wrap::wrap(&body, width, &first, &rest, Break::Anywhere) {
            // The tint runs to the edge, as a band.
            let pad = width.saturating_sub(wrap::line_width(&line));
            if tint != Style::new() && pad > 0 {
                line.spans.push(Span::styled(" ".repeat(pad), tint));
            }
            out.push(line);
        }
    }
    out
}

/// Each line's spans coloured by the language of `path` (`None` past the
/// bounds). Context and removed lines are read as the old file, context and
/// added lines as the new one, so an edit inside a string or comment keeps
/// its colours.
fn highlighted(rows: &[DiffRow], texts: &[Cow<'_, str>], path: Option<&str>) -> Vec<Option<Vec<Span<'static>>>> {
    let mut out = vec![None; rows.len()];
    let Some((mut old_side, mut new_side)) =
        path.and_then(|p| Some((FileHighlighter::for_path(p)?, FileHighlighter::for_path(p)?)))
    else {
        return out;
    };
    let lines = rows.iter().zip(texts).enumerate().filter_map(|(i, (row, text))| match row {
        DiffRow::Line { tag, .. } if text.len() <= MAX_HIGHLIGHTED_LINE_BYTES => Some((i, *tag, text)),
        _ => None,
    });
    for (i, tag, text) in lines.take(MAX_HIGHLIGHTED_LINES) {
        out[i] = match tag {
            '-' => old_side.line(text),
            '+' => new_side.line(text),
            _ => {
                let _ = old_side.line(text);
                new_side.line(text)
            }
        };
    }
    out
}

/// The changed byte ranges of each row: a run of removed lines followed by
/// a run of added ones is compared pair by pair, in order.
fn word_marks(rows: &[DiffRow], texts: &[Cow<'_, str>]) -> Vec<Vec<Range<usize>>> {
    let tag = |i: usize| match rows.get(i) {
        Some(DiffRow::Line { tag, .. }) => Some(*tag),
        _ => None,
    };
    let mut out = vec![Vec::new(); rows.len()];
    let mut pairs = 0;
    let mut i = 0;
    while i < rows.len() && pairs < MAX_WORD_PAIRS {
        let removed_start = i;
        while tag(i) == Some('-') {
            i += 1;
        }
        let added_start = i;
        while tag(i) == Some('+') {
            i += 1;
        }
        let (removed, added) = (added_start - removed_start, i - added_start);
        for k in 0..removed.min(added).min(MAX_WORD_PAIRS - pairs) {
            let (o, n) = (removed_start + k, added_start + k);
            if let Some(changed) = word_diff::changed_words(&texts[o], &texts[n]) {
                out[o] = changed.old;
                out[n] = changed.new;
            }
            pairs += 1;
        }
        if i == removed_start {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    fn line(tag: char, n: u64, text: &str) -> DiffRow {
        let (old, new) = match tag {
            '+' => (None, Some(n)),
            '-' => (Some(n), None),
            _ => (Some(n), Some(n)),
        };
        DiffRow::Line { tag, old, new, text: text.into() }
    }

    #[test]
    fn changed_lines_are_tinted_coloured_and_their_changed_words_marked() {
        let rows = [
            line(' ', 1, "fn main() {"),
            line('-', 2, "    let x = 1;"),
            line('+', 2, "    let x = 2;"),
            line(' ', 3, "}"),
        ];
        let theme = Theme::default();
        let out = render_rows(&rows, Some("src/main.rs"), 40, &theme);
        assert_eq!(out.len(), 4);
        let styles_of = |row: &Line<'_>, text: &str| {
            row.spans.iter().skip(1).filter(|s| s.content.trim() == text).map(|s| s.style).collect::<Vec<_>>()
        };
        // The changed word has the strong tint, the rest of the line the line tint, to the edge.
        assert_eq!(styles_of(&out[2], "2")[0].bg, theme.diff_add_word().bg, "{:?}", out[2]);
        assert_eq!(styles_of(&out[1], "1")[0].bg, theme.diff_remove_word().bg, "{:?}", out[1]);
        assert_eq!(styles_of(&out[2], "let")[0].bg, theme.diff_add_line().bg);
        assert_eq!(wrap::line_width(&out[2]), 40, "the band reaches the edge");
        // The language colours the text: `let` is a keyword.
        assert_eq!(styles_of(&out[2], "let")[0].fg, Some(Color::Magenta));
        // Context lines have no tint.
        assert!(out[0].spans.iter().all(|s| s.style.bg.is_none()), "{:?}", out[0]);
    }

    #[test]
    fn without_colour_the_rows_are_plain_text() {
        let rows = [line('-', 2, "let x = 1;"), line('+', 2, "let x = 2;")];
        let out = render_rows(&rows, Some("a.rs"), 30, &Theme::plain());
        for row in &out {
            assert!(row.spans.iter().all(|s| s.style.bg.is_none() && s.style.fg.is_none()), "{row:?}");
            assert!(row.spans.iter().all(|s| !s.style.add_modifier.contains(Modifier::REVERSED)), "{row:?}");
        }
        let text: Vec<String> = out.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(text, ["  2 - let x = 1;", "  2 + let x = 2;"]);
    }

    #[test]
    fn highlighting_stops_at_its_bounds() {
        let many: Vec<DiffRow> = (1..=MAX_HIGHLIGHTED_LINES as u64 + 5).map(|n| line('+', n, "let x = 1;")).collect();
        let texts: Vec<Cow<'_, str>> = many.iter().map(|_| Cow::Borrowed("let x = 1;")).collect();
        let spans = highlighted(&many, &texts, Some("a.rs"));
        assert!(spans[0].is_some() && spans[MAX_HIGHLIGHTED_LINES - 1].is_some());
        assert!(spans[MAX_HIGHLIGHTED_LINES].is_none(), "past the cap, plain");
        let long = "x".repeat(MAX_HIGHLIGHTED_LINE_BYTES + 1);
        let spans = highlighted(&[line('+', 1, &long)], &[Cow::Borrowed(long.as_str())], Some("a.rs"));
        assert!(spans[0].is_none(), "a huge line stays plain");
    }

    #[test]
    fn unified_rows_are_numbered() {
        let rows = from_unified("--- a/x\n+++ b/x\n@@ -3,2 +3,2 @@\n a\n-b\n+c\n@@ -10,1 +10,1 @@\n-d\n+e\n");
        assert_eq!(
            rows,
            vec![
                DiffRow::Line { tag: ' ', old: Some(3), new: Some(3), text: "a".into() },
                DiffRow::Line { tag: '-', old: Some(4), new: None, text: "b".into() },
                DiffRow::Line { tag: '+', old: None, new: Some(4), text: "c".into() },
                DiffRow::Gap,
                DiffRow::Line { tag: '-', old: Some(10), new: None, text: "d".into() },
                DiffRow::Line { tag: '+', old: None, new: Some(10), text: "e".into() },
            ]
        );
    }
}
