//! Wrapping styled text into rows of a given width, measured the way ratatui
//! draws it: grapheme clusters, each as wide as the terminal shows it.
//!
//! Rows carry a prefix (a list marker, a quote bar, an indent): one for the
//! first row and one for the rest, so wrapped text hangs under its first
//! character. Text must already be [`crate::sanitize::clean`]ed; a `\n`
//! inside it starts a new row.

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// How a row that is too long is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// Between words; a word longer than a row is broken where it must be.
    /// Spaces at a break are dropped.
    Words,
    /// At the column limit, keeping every space (code, tool output).
    Anywhere,
}

/// The display width of a string, as ratatui draws it.
pub fn width(text: &str) -> usize {
    measured(text).map(|(_, _, w)| w).sum()
}

/// The display width of a line.
pub fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| width(&s.content)).sum()
}

pub use crate::sanitize::TAB_WIDTH;

/// The one way tern measures text: every extended grapheme cluster of
/// `text` (the segmentation ratatui draws with) with its byte offset and its
/// width in columns — a tab [`TAB_WIDTH`], other control characters 0, the
/// rest as ratatui counts them. Widths that agree with the buffer keep the
/// cursor from drifting on joined emoji.
pub fn measured(text: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    use unicode_segmentation::UnicodeSegmentation;
    text.grapheme_indices(true).map(|(at, g)| {
        let w = if g == "\t" {
            TAB_WIDTH
        } else if g.chars().all(char::is_control) {
            0
        } else {
            usize::from(g.cell_width())
        };
        (at, g, w)
    })
}

/// The graphemes ratatui would draw, with their widths (zero-width ones and
/// control characters are skipped, as ratatui skips them).
fn graphemes(text: &str) -> impl Iterator<Item = (&str, usize)> {
    measured(text).filter(|(_, g, w)| *w > 0 && *g != "\t").map(|(_, g, w)| (g, w))
}

/// One drawable grapheme with its style.
#[derive(Clone, Copy)]
struct Cell<'a> {
    sym: &'a str,
    width: usize,
    style: Style,
}

impl Cell<'_> {
    fn is_space(&self) -> bool {
        self.sym == " "
    }
}

/// Wrap `spans` to rows of at most `width` columns including the prefixes:
/// `first` leads the first row, `rest` every other row.
pub fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &Line<'static>,
    rest: &Line<'static>,
    mode: Break,
) -> Vec<Line<'static>> {
    let mut rows = Rows {
        done: Vec::new(),
        row: Vec::new(),
        row_width: 0,
        first,
        rest,
        mode,
        avail_first: width.saturating_sub(line_width(first)).max(1),
        avail_rest: width.saturating_sub(line_width(rest)).max(1),
    };
    for (i, logical) in split_lines(spans).iter().enumerate() {
        if i > 0 {
            rows.emit();
        }
        // Whether the row being filled continues a wrapped logical line, whose
        // leading spaces are dropped in word mode.
        let mut continued = false;
        for token in tokens(logical, mode) {
            let token_width: usize = token.iter().map(|c| c.width).sum();
            let is_space = mode == Break::Words && token.first().is_some_and(Cell::is_space);
            if is_space {
                if rows.row.is_empty() && continued {
                    continue;
                }
                if rows.row_width + token_width <= rows.avail() {
                    rows.push(token);
                } else {
                    rows.emit();
                    continued = true;
                }
                continue;
            }
            if rows.row_width + token_width <= rows.avail() {
                rows.push(token);
                continue;
            }
            let has_text = rows.row.iter().any(|c| !c.is_space());
            if mode == Break::Words && has_text && token_width <= rows.avail_rest {
                rows.emit();
                rows.push(token);
                continued = true;
                continue;
            }
            // Break the token itself.
            for cell in token {
                if rows.row_width + cell.width > rows.avail() && !rows.row.is_empty() {
                    rows.emit();
                    continued = true;
                }
                rows.push(std::slice::from_ref(cell));
            }
        }
    }
    rows.emit();
    rows.done
}

/// Rows being filled by [`wrap`].
struct Rows<'p, 'a> {
    done: Vec<Line<'static>>,
    row: Vec<Cell<'a>>,
    row_width: usize,
    first: &'p Line<'static>,
    rest: &'p Line<'static>,
    mode: Break,
    avail_first: usize,
    avail_rest: usize,
}

impl<'a> Rows<'_, 'a> {
    /// Columns for text on the row being filled.
    fn avail(&self) -> usize {
        if self.done.is_empty() { self.avail_first } else { self.avail_rest }
    }

    fn push(&mut self, cells: &[Cell<'a>]) {
        self.row.extend_from_slice(cells);
        self.row_width += cells.iter().map(|c| c.width).sum::<usize>();
    }

    /// Finish the row being filled.
    fn emit(&mut self) {
        if self.mode == Break::Words {
            while self.row.last().is_some_and(Cell::is_space) {
                self.row.pop();
            }
        }
        let prefix = if self.done.is_empty() { self.first } else { self.rest };
        self.done.push(assemble(prefix, &self.row));
        self.row.clear();
        self.row_width = 0;
    }
}

/// One row holding as much of `spans` as fits in `width` columns, ending in
/// `…` when something was cut.
pub fn truncate(spans: &[Span<'_>], width: usize) -> Line<'static> {
    let total: usize = spans.iter().map(|s| self::width(&s.content)).sum();
    if total <= width {
        return Line::from(spans.iter().map(|s| Span::styled(s.content.to_string(), s.style)).collect::<Vec<_>>());
    }
    let room = width.saturating_sub(1);
    let mut cells = Vec::new();
    let mut used = 0;
    let mut last_style = Style::new();
    'outer: for span in spans {
        for (sym, w) in graphemes(&span.content) {
            if used + w > room {
                break 'outer;
            }
            used += w;
            last_style = span.style;
            cells.push(Cell { sym, width: w, style: span.style });
        }
    }
    if width > 0 {
        cells.push(Cell { sym: "…", width: 1, style: last_style });
    }
    assemble(&Line::default(), &cells)
}

/// Split spans at `\n` into logical lines of cells.
fn split_lines<'a>(spans: &'a [Span<'_>]) -> Vec<Vec<Cell<'a>>> {
    let mut lines = vec![Vec::new()];
    for span in spans {
        for (i, part) in span.content.split('\n').enumerate() {
            if i > 0 {
                lines.push(Vec::new());
            }
            if let Some(line) = lines.last_mut() {
                line.extend(graphemes(part).map(|(sym, width)| Cell { sym, width, style: span.style }));
            }
        }
    }
    lines
}

/// Words and runs of spaces (word mode), or single graphemes (anywhere).
fn tokens<'c, 'a>(cells: &'c [Cell<'a>], mode: Break) -> impl Iterator<Item = &'c [Cell<'a>]> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= cells.len() {
            return None;
        }
        let end = match mode {
            Break::Anywhere => start + 1,
            Break::Words => {
                let space = cells[start].is_space();
                let len = cells[start..].iter().take_while(|c| c.is_space() == space).count();
                start + len.max(1)
            }
        };
        let token = &cells[start..end];
        start = end;
        Some(token)
    })
}

/// A row: the prefix, then the cells merged into spans of equal style.
fn assemble(prefix: &Line<'static>, cells: &[Cell<'_>]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = prefix.spans.clone();
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for cell in cells {
        if style != Some(cell.style) {
            if let Some(s) = style
                && !text.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut text), s));
            }
            style = Some(cell.style);
        }
        text.push_str(cell.sym);
    }
    if let Some(s) = style
        && !text.is_empty()
    {
        spans.push(Span::styled(text, s));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    fn plain(text: &str, width: usize, mode: Break) -> Vec<String> {
        texts(&wrap(&[Span::raw(text)], width, &Line::default(), &Line::default(), mode))
    }

    #[test]
    fn wraps_words_and_breaks_long_ones() {
        assert_eq!(plain("the quick brown fox", 10, Break::Words), ["the quick", "brown fox"]);
        assert_eq!(plain("abcdefghijkl xy", 5, Break::Words), ["abcde", "fghij", "kl xy"]);
        assert_eq!(plain("", 5, Break::Words), [""]);
        assert_eq!(plain("a\n\nb", 5, Break::Words), ["a", "", "b"]);
    }

    #[test]
    fn hanging_prefix() {
        let first = Line::from("- ");
        let rest = Line::from("  ");
        let rows = wrap(&[Span::raw("one two three four")], 9, &first, &rest, Break::Words);
        assert_eq!(texts(&rows), ["- one two", "  three", "  four"]);
    }

    #[test]
    fn wide_characters_count_twice() {
        assert_eq!(plain("日本語のテキスト", 6, Break::Words), ["日本語", "のテキ", "スト"]);
        assert_eq!(plain("a日", 2, Break::Anywhere), ["a", "日"]);
    }

    #[test]
    fn anywhere_keeps_spaces() {
        assert_eq!(plain("ab  cd  ef", 4, Break::Anywhere), ["ab  ", "cd  ", "ef"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let bold = Style::new().add_modifier(ratatui::style::Modifier::BOLD);
        let rows = wrap(
            &[Span::raw("plain "), Span::styled("bold words", bold)],
            8,
            &Line::default(),
            &Line::default(),
            Break::Words,
        );
        assert_eq!(texts(&rows), ["plain", "bold", "words"]);
        assert_eq!(rows[1].spans[0].style, bold);
    }

    #[test]
    fn truncates_with_ellipsis() {
        assert_eq!(texts(&[truncate(&[Span::raw("hello world")], 8)]), ["hello w…"]);
        assert_eq!(texts(&[truncate(&[Span::raw("hello")], 8)]), ["hello"]);
        assert_eq!(texts(&[truncate(&[Span::raw("日本語")], 4)]), ["日…"]);
    }
}
