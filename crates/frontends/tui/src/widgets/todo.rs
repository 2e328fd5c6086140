//! The todo panel above the composer: the model's plan from `todo_write`,
//! with a "Todo 2/5" header. Pending items are `☐`, the one in progress is
//! `◐` in the accent colour and shows its active form ("Running the
//! tests"), done items are `☑`, dim and struck through.
//!
//! When the panel is given fewer rows than it wants, finished items before
//! the first unfinished one fold into one "☑ N done" row, then the tail is
//! cut with "… N more".

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use tern_protocol::{TodoItem, TodoStatus};

use super::wrap::wrap_spans;
use crate::theme::Theme;

/// Rows the panel asks for at most, header included.
const MAX_HEIGHT: usize = 12;

/// The item's rows at `width` (one column of margin on the left).
fn item_lines(item: &TodoItem, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let (icon, text, style) = match item.status {
        TodoStatus::Pending => ("☐ ", &item.content, theme.text()),
        TodoStatus::InProgress => {
            let text = if item.active_form.trim().is_empty() { &item.content } else { &item.active_form };
            ("◐ ", text, theme.accent())
        }
        TodoStatus::Completed => ("☑ ", &item.content, theme.dim().add_modifier(Modifier::CROSSED_OUT)),
    };
    let icon_style = if item.status == TodoStatus::Completed { theme.dim() } else { style };
    wrap_spans(&[(text, style)], width, Span::styled(format!(" {icon}"), icon_style), Span::raw("   "))
}

fn header(todos: &[TodoItem], theme: &Theme) -> Line<'static> {
    let done = todos.iter().filter(|t| t.status == TodoStatus::Completed).count();
    Line::from(vec![
        Span::styled(" Todo", theme.accent()),
        Span::styled(format!(" {done}/{}", todos.len()), theme.dim()),
    ])
}

/// Rows the panel wants at `width`: 0 when there are no todos, else the header and every item's rows (at most 12).
pub fn todo_height(todos: &[TodoItem], width: u16) -> u16 {
    if todos.is_empty() {
        return 0;
    }
    let theme = Theme::plain();
    let rows: usize = todos.iter().map(|t| item_lines(t, usize::from(width), &theme).len()).sum();
    u16::try_from((rows + 1).min(MAX_HEIGHT)).unwrap_or(0)
}

/// Draws the panel into `area`.
pub fn render_todos(todos: &[TodoItem], area: Rect, buf: &mut Buffer, theme: &Theme) {
    if todos.is_empty() || area.height == 0 {
        return;
    }
    let width = usize::from(area.width);
    let room = usize::from(area.height) - 1;
    let per_item: Vec<Vec<Line<'static>>> = todos.iter().map(|t| item_lines(t, width, theme)).collect();
    let mut lines: Vec<Line<'static>> = vec![header(todos, theme)];
    let total: usize = per_item.iter().map(Vec::len).sum();
    let mut skip = 0;
    if total > room {
        // Fold the finished items at the top into one row.
        skip = todos.iter().take_while(|t| t.status == TodoStatus::Completed).count();
        if skip > 0 {
            lines.push(Line::styled(format!(" ☑ {skip} done"), theme.dim()));
        }
    }
    let room_left = room.saturating_sub(lines.len() - 1);
    let items = &per_item[skip..];
    if items.iter().map(Vec::len).sum::<usize>() <= room_left {
        lines.extend(items.iter().flatten().cloned());
    } else {
        // Whole items only, and a row to say how many are left out.
        let mut used = 0;
        let fitting = items.iter().take_while(|rows| {
            used += rows.len();
            used < room_left
        });
        let fitting: Vec<&Vec<Line<'static>>> = fitting.collect();
        let hidden = items.len() - fitting.len();
        lines.extend(fitting.into_iter().flatten().cloned());
        lines.push(Line::styled(format!(" … {hidden} more"), theme.dim()));
    }
    for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
        let y = area.y + u16::try_from(i).unwrap_or(0);
        buf.set_line(area.x, y, line, area.width);
    }
}
