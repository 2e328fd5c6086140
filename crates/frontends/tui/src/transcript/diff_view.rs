//! File changes as coloured diff rows with line numbers, from the `hunks`
//! (or, failing that, the unified `diff`) that edit and write return in
//! their details.

use ratatui::text::{Line, Span};

use super::cell::Ctx;
use crate::sanitize;
use crate::wrap::{self, Break};

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

/// Draw `rows`, at most `limit` of them (then a "… N more lines" row).
pub(crate) fn render(rows: &[DiffRow], limit: Option<usize>, total: usize, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let theme = ctx.theme;
    let shown = limit.map_or(rows.len(), |l| l.min(rows.len()));
    let digits = rows[..shown]
        .iter()
        .filter_map(|r| match r {
            DiffRow::Line { old, new, .. } => new.or(*old),
            DiffRow::Gap => None,
        })
        .max()
        .unwrap_or(1)
        .to_string()
        .len();
    let mut out = Vec::new();
    for row in &rows[..shown] {
        let DiffRow::Line { tag, old, new, text } = row else {
            out.push(Line::from(vec![Span::raw(" ".repeat(digits + 3)), Span::styled("⋮", theme.dim())]));
            continue;
        };
        let style = match tag {
            '+' => theme.diff_add(),
            '-' => theme.diff_remove(),
            _ => theme.text(),
        };
        let number = if *tag == '-' { *old } else { new.or(*old) };
        let number = number.map_or_else(String::new, |n| n.to_string());
        let first = Line::from(vec![
            Span::styled(format!("  {number:>digits$} "), theme.dim()),
            Span::styled(format!("{tag} "), style),
        ]);
        let rest = Line::from(vec![Span::raw(" ".repeat(digits + 3)), Span::styled("↪ ", theme.dim())]);
        let text = sanitize::clean(text);
        out.extend(wrap::wrap(&[Span::styled(text.into_owned(), style)], ctx.width, &first, &rest, Break::Anywhere));
    }
    if total > shown {
        let more = super::units::count((total - shown) as u64, "more line", "more lines");
        out.push(Line::from(Span::styled(format!("  … {more} (Ctrl+O)"), theme.dim())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
