//! Restyling byte ranges of a row's text: the changed words of a diff line,
//! the matches of a search.

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::Span;

/// `spans` with the bytes in `marks` (ranges over their joined text)
/// patched with `style`; spans are cut where a mark starts or ends.
pub(crate) fn mark_ranges(spans: Vec<Span<'static>>, marks: &[Range<usize>], style: Style) -> Vec<Span<'static>> {
    if marks.is_empty() {
        return spans;
    }
    let mut out = Vec::with_capacity(spans.len() + 2 * marks.len());
    let mut at = 0;
    for span in spans {
        let text = span.content.as_ref();
        let end = at + text.len();
        let mut cuts: Vec<usize> = marks
            .iter()
            .flat_map(|m| [m.start, m.end])
            .filter(|c| *c > at && *c < end && text.is_char_boundary(c - at))
            .map(|c| c - at)
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut from = 0;
        for to in cuts.into_iter().chain([text.len()]) {
            if to > from {
                let inside = marks.iter().any(|m| m.start <= at + from && at + from < m.end);
                let piece = if inside { span.style.patch(style) } else { span.style };
                out.push(Span::styled(text[from..to].to_string(), piece));
            }
            from = to;
        }
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    #[test]
    fn marks_cut_across_spans() {
        let spans = vec![Span::styled("let x", Style::new().fg(Color::Magenta)), Span::raw(" = 12;")];
        let out = mark_ranges(spans, &[Range { start: 4, end: 9 }], Style::new().add_modifier(Modifier::REVERSED));
        let pieces: Vec<(&str, bool)> =
            out.iter().map(|s| (s.content.as_ref(), s.style.add_modifier.contains(Modifier::REVERSED))).collect();
        assert_eq!(pieces, [("let ", false), ("x", true), (" = 1", true), ("2;", false)]);
        assert_eq!(out[1].style.fg, Some(Color::Magenta), "the span's own colour stays");
    }
}
