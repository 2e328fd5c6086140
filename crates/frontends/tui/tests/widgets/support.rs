//! Rendering helpers shared by the widget tests.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The widths every widget is drawn at.
pub const WIDTHS: [u16; 3] = [40, 80, 120];

/// The buffer as text: one line per row, trailing spaces trimmed; the cell
/// hidden behind a wide char is skipped.
pub fn buffer_text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in buf.area.top()..buf.area.bottom() {
        let mut row = String::new();
        let mut skip = 0usize;
        for x in buf.area.left()..buf.area.right() {
            let cell = &buf[(x, y)];
            if skip == 0 {
                row.push_str(cell.symbol());
            }
            skip = skip.max(unicode_width::UnicodeWidthStr::width(cell.symbol())).saturating_sub(1);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// A fresh buffer.
pub fn buffer(width: u16, height: u16) -> Buffer {
    Buffer::empty(Rect::new(0, 0, width, height))
}

/// `draw(width)` at each width, under a header naming the width.
pub fn at_widths(mut draw: impl FnMut(u16) -> String) -> String {
    WIDTHS.iter().map(|w| format!("── width {w} ──\n{}", draw(*w))).collect()
}

/// A key press without modifiers.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// A key press with modifiers.
pub fn key_with(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

/// Ctrl + a letter.
pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}
