//! Shared helpers for the TUI's rendering tests: drawing a transcript into a
//! buffer and turning the buffer into text (or a style dump) for snapshots.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use serde_json::Value;
use tern_protocol::{AgentEvent, ToolResultContent};
use tern_tui::theme::Theme;
use tern_tui::transcript::{CellKind, ScrollState, ToolCell, Transcript};
use tern_tui::wrap;

/// The widths every cell is snapshotted at.
pub const WIDTHS: [u16; 3] = [40, 80, 120];

/// The rows of `buf`, trailing spaces trimmed, one per line.
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        let mut hidden = 0;
        for x in area.left()..area.right() {
            if hidden > 0 {
                hidden -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            hidden = wrap::width(sym).saturating_sub(1);
            row.push_str(sym);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// Draw the whole transcript at `width` into a buffer of its full height.
pub fn draw(t: &mut Transcript, width: u16, theme: &Theme, now: Instant) -> Buffer {
    t.set_theme(*theme);
    let height = t.height(width).clamp(1, usize::from(u16::MAX)) as u16;
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    t.render(area, &mut buf, &mut ScrollState::default(), theme, now);
    buf
}

/// The whole transcript as text at `width`.
pub fn render(t: &mut Transcript, width: u16, theme: &Theme, now: Instant) -> String {
    buffer_text(&draw(t, width, theme, now))
}

/// The transcript at each of [`WIDTHS`], one section per width.
pub fn at_widths(t: &mut Transcript, theme: &Theme, now: Instant) -> String {
    let mut out = String::new();
    for w in WIDTHS {
        writeln!(out, "──── width {w} ────").unwrap();
        out.push_str(&render(t, w, theme, now));
    }
    out
}

/// Each run of equally styled cells of each row: `[fg mods] "text"`; blank
/// unstyled runs are left out.
pub fn style_dump(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut runs: Vec<(Style, String)> = Vec::new();
        for x in area.left()..area.right() {
            let cell = &buf[(x, y)];
            let mut style = cell.style();
            // A drawn cell's "no colour" is Reset; show it as no colour.
            for c in [&mut style.fg, &mut style.bg, &mut style.underline_color] {
                if *c == Some(Color::Reset) {
                    *c = None;
                }
            }
            match runs.last_mut() {
                Some((s, text)) if *s == style => text.push_str(cell.symbol()),
                _ => runs.push((style, cell.symbol().to_string())),
            }
        }
        let parts: Vec<String> = runs
            .into_iter()
            .filter(|(s, text)| !(text.trim().is_empty() && s.fg.is_none() && s.add_modifier.is_empty()))
            .map(|(s, text)| format!("[{}] {:?}", describe(s), text.trim_end()))
            .collect();
        writeln!(out, "{y:>2}: {}", parts.join(" ")).unwrap();
    }
    out
}

fn describe(s: Style) -> String {
    let mut parts = Vec::new();
    if let Some(fg) = s.fg {
        parts.push(format!("{fg:?}"));
    }
    for (m, name) in [
        (Modifier::BOLD, "bold"),
        (Modifier::DIM, "dim"),
        (Modifier::ITALIC, "italic"),
        (Modifier::UNDERLINED, "underlined"),
        (Modifier::REVERSED, "reversed"),
        (Modifier::CROSSED_OUT, "crossed"),
    ] {
        if s.add_modifier.contains(m) {
            parts.push(name.to_string());
        }
    }
    if let Some(bg) = s.bg {
        parts.push(format!("on {bg:?}"));
    }
    if parts.is_empty() { "-".into() } else { parts.join(" ") }
}

/// Start a tool call through the event stream; returns its cell.
pub fn start_tool(t: &mut Transcript, id: &str, name: &str, input: Value) -> usize {
    t.apply(&AgentEvent::ToolCallStart { id: id.into(), name: name.into(), input });
    t.len() - 1
}

/// Finish a tool call through the event stream.
pub fn end_tool(t: &mut Transcript, id: &str, name: &str, text: &str, is_error: bool, details: Option<Value>, ms: u64) {
    t.apply(&AgentEvent::ToolExecutionEnd {
        id: id.into(),
        name: name.into(),
        content: vec![ToolResultContent::text(text)],
        is_error,
        details: details.map(|d| Box::new(details_of(name, d))),
        duration_ms: ms,
    });
}

/// A tool's details written as JSON, as the tool `name` reports them (its
/// `kind` added); what does not fit stays as it was written.
pub fn details_of(name: &str, details: Value) -> tern_protocol::ToolDetails {
    let kind = match name {
        "grep" | "glob" | "ls" => "search",
        other => other,
    };
    let mut tagged = details.clone();
    if let Some(obj) = tagged.as_object_mut() {
        obj.insert("kind".into(), Value::String(kind.into()));
    }
    serde_json::from_value(tagged).unwrap_or(tern_protocol::ToolDetails::Other(details))
}

/// When a tool cell started, so a test can draw it a fixed time later.
pub fn started(t: &Transcript, i: usize) -> Instant {
    match t.cell(i) {
        Some(CellKind::Tool(ToolCell { started, .. })) => *started,
        Some(CellKind::Shell(s)) => s.started,
        _ => panic!("cell {i} is not a tool"),
    }
}

/// `started(i) + ms`.
pub fn later(t: &Transcript, i: usize, ms: u64) -> Instant {
    started(t, i) + Duration::from_millis(ms)
}

/// Numbered output lines `from..to`, each ending in a newline.
pub fn numbered(prefix: &str, from: usize, to: usize) -> String {
    (from..to).map(|i| format!("{prefix} {i}\n")).collect()
}
