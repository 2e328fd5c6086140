//! GitHub tables: box-drawn, columns shrunk to fit the width (cells wrap
//! inside them), or, when even that is too narrow, one `header: value` line
//! per cell, row after row.

use pulldown_cmark::Alignment;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::theme::Theme;
use crate::wrap::{self, Break};

/// Columns narrower than this (or than their content) make the box layout
/// unreadable; below it we use the list layout.
const MIN_COLUMN: usize = 6;

/// A table being read; the first row is the header.
pub(super) struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
}

impl Table {
    pub(super) fn new(aligns: Vec<Alignment>) -> Self {
        Self { aligns, rows: Vec::new() }
    }

    pub(super) fn start_row(&mut self) {
        self.rows.push(Vec::new());
    }

    pub(super) fn push_cell(&mut self, spans: Vec<Span<'static>>) {
        if let Some(row) = self.rows.last_mut() {
            row.push(spans);
        }
    }

    /// The table in rows of at most `width` columns.
    pub(super) fn render(mut self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0).max(self.aligns.len());
        if columns == 0 {
            return Vec::new();
        }
        for row in &mut self.rows {
            row.resize(columns, Vec::new());
        }
        if let Some(header) = self.rows.first_mut() {
            for cell in header {
                for span in cell {
                    span.style = span.style.add_modifier(Modifier::BOLD);
                }
            }
        }
        let natural: Vec<usize> =
            (0..columns).map(|c| self.rows.iter().map(|r| cell_width(&r[c])).max().unwrap_or(0).max(1)).collect();
        let overhead = 3 * columns + 1;
        let needed: usize = natural.iter().map(|n| (*n).min(MIN_COLUMN)).sum();
        if width < overhead + needed {
            return self.as_list(width, theme);
        }
        let widths = fit(&natural, width - overhead);
        self.boxed(&widths, theme)
    }

    fn boxed(&self, widths: &[usize], theme: &Theme) -> Vec<Line<'static>> {
        let border = |left: &str, mid: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            Line::from(Span::styled(format!("{left}{}{right}", parts.join(mid)), theme.dim()))
        };
        let mut out = vec![border("┌", "┬", "┐")];
        for (i, row) in self.rows.iter().enumerate() {
            let cells: Vec<Vec<Line<'static>>> = row
                .iter()
                .zip(widths)
                .map(|(cell, w)| wrap::wrap(cell, *w, &Line::default(), &Line::default(), Break::Words))
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for r in 0..height {
                let mut spans = vec![Span::styled("│ ", theme.dim())];
                for (c, (lines, w)) in cells.iter().zip(widths).enumerate() {
                    let line = lines.get(r).cloned().unwrap_or_default();
                    let pad = w.saturating_sub(wrap::line_width(&line));
                    let (before, after) = match self.aligns.get(c) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    if before > 0 {
                        spans.push(Span::raw(" ".repeat(before)));
                    }
                    spans.extend(line.spans);
                    if after > 0 {
                        spans.push(Span::raw(" ".repeat(after)));
                    }
                    let sep = if c + 1 == widths.len() { " │" } else { " │ " };
                    spans.push(Span::styled(sep, theme.dim()));
                }
                out.push(Line::from(spans));
            }
            if i == 0 && self.rows.len() > 1 {
                out.push(border("├", "┼", "┤"));
            }
        }
        out.push(border("└", "┴", "┘"));
        out
    }

    /// Too narrow for columns: each row as `header: value` lines.
    fn as_list(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let Some((header, body)) = self.rows.split_first() else { return Vec::new() };
        if body.is_empty() {
            let spans: Vec<Span<'static>> =
                header.iter().enumerate().flat_map(|(i, c)| separated(i, " · ", c.clone())).collect();
            return wrap::wrap(&spans, width, &Line::default(), &Line::default(), Break::Words);
        }
        let mut out = Vec::new();
        let indent = Line::from("  ");
        for (i, row) in body.iter().enumerate() {
            if i > 0 {
                out.push(Line::from(Span::styled("─".repeat(width.min(8)), theme.dim())));
            }
            for (name, value) in header.iter().zip(row) {
                let mut spans = name.clone();
                spans.push(Span::styled(": ", theme.dim()));
                spans.extend(value.iter().cloned());
                out.extend(wrap::wrap(&spans, width, &Line::default(), &indent, Break::Words));
            }
        }
        out
    }
}

fn separated(i: usize, sep: &'static str, cell: Vec<Span<'static>>) -> Vec<Span<'static>> {
    let mut spans = if i > 0 { vec![Span::raw(sep)] } else { Vec::new() };
    spans.extend(cell);
    spans
}

fn cell_width(cell: &[Span<'_>]) -> usize {
    let text: String = cell.iter().map(|s| s.content.as_ref()).collect();
    text.split('\n').map(wrap::width).max().unwrap_or(0)
}

/// Column widths within `avail`: narrow columns keep their natural width,
/// wide ones share what is left equally.
fn fit(natural: &[usize], avail: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= avail {
        return natural.to_vec();
    }
    let mut order: Vec<usize> = (0..natural.len()).collect();
    order.sort_by_key(|&i| natural[i]);
    let mut widths = vec![0; natural.len()];
    let mut remaining = avail;
    for (k, &i) in order.iter().enumerate() {
        let share = remaining / (natural.len() - k);
        let w = natural[i].min(share).max(1);
        widths[i] = w;
        remaining = remaining.saturating_sub(w);
    }
    widths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_keeps_narrow_columns() {
        assert_eq!(fit(&[3, 40, 50], 40), vec![3, 18, 19]);
        assert_eq!(fit(&[3, 4], 40), vec![3, 4]);
    }
}
