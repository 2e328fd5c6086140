//! Finding text in the transcript and marking it on screen.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;

use super::Transcript;

impl Transcript {
    /// Mark matches of `query` (case-insensitive) on screen; `None` or an
    /// empty query stops.
    pub fn set_highlight(&mut self, query: Option<String>) {
        self.highlight = query.map(|q| q.to_lowercase()).filter(|q| !q.is_empty());
    }

    /// The offset (rows up from the bottom, as [`super::ScrollState`] takes
    /// it) that puts the next row matching `query` (case-insensitive) at the
    /// bottom of the window: the nearest one above `from_offset`, or with
    /// `backwards`, the nearest one below it (towards the end); wrapping
    /// around. `None` when nothing matches. Pass the previous result as
    /// `from_offset` to step through matches: render clamps the scroll
    /// offset, and a clamped offset would find the same match again.
    pub fn find(&mut self, query: &str, width: u16, from_offset: usize, backwards: bool) -> Option<usize> {
        let query = query.to_lowercase();
        if query.is_empty() {
            return None;
        }
        self.layout(width);
        let total = self.prefix_total();
        // Block row of `from_offset` at the bottom of the window.
        let from = total.checked_sub(1 + from_offset);
        let hits = |row: &usize| {
            self.locate(*row).is_some_and(|(i, within)| {
                within.checked_sub(1).and_then(|r| self.entries[i].rows.get(r)).is_some_and(|l| matches(l, &query))
            })
        };
        let row = if backwards {
            let start = from.map_or(0, |f| f + 1);
            (start..total).find(hits).or_else(|| (0..start.min(total)).find(hits))
        } else {
            let end = from.unwrap_or(total).min(total);
            (0..end).rev().find(hits).or_else(|| (end..total).rev().find(hits))
        }?;
        Some(total - 1 - row)
    }
}

fn matches(line: &Line<'_>, query: &str) -> bool {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    text.to_lowercase().contains(query)
}

/// Restyle the cells of row `y` of `area` that spell `query` (lowercase).
pub(super) fn highlight_row(buf: &mut Buffer, area: Rect, y: u16, query: &str, style: Style) {
    // The row's text, lowercased, and the column each byte came from.
    let mut text = String::new();
    let mut columns = Vec::new();
    let mut hidden = 0;
    for x in area.left()..area.right() {
        // Cells covered by a wide character before them hold a blank.
        if hidden > 0 {
            hidden -= 1;
            continue;
        }
        let symbol = buf[(x, y)].symbol();
        hidden = crate::wrap::width(symbol).saturating_sub(1);
        let lower = symbol.to_lowercase();
        columns.extend(std::iter::repeat_n(x, lower.len()));
        text.push_str(&lower);
    }
    let hits: Vec<(usize, usize)> = text.match_indices(query).map(|(start, m)| (start, start + m.len())).collect();
    for (start, end) in hits {
        let (Some(&first), Some(&last)) = (columns.get(start), columns.get(end.saturating_sub(1))) else { continue };
        for x in first..=last {
            let cell = &mut buf[(x, y)];
            let patched = cell.style().patch(style);
            cell.set_style(patched);
        }
    }
}
