//! Inline drawing: the finished part of the conversation is written once
//! into the terminal's own scrollback, above a live frame (what is still
//! streaming or running, the composer, the status line) that is redrawn in
//! place at the bottom of what was written.
//!
//! Only relative cursor moves are used, so nothing asks the terminal where
//! its cursor is (not every terminal answers): the frame's top is found by
//! moving up from where the cursor was left. Rows that did not change are
//! not written again; everything goes out in one write inside a
//! synchronized update, so the frame does not flicker where the terminal
//! supports it.

use std::io::Write;

use crossterm::style::{ContentStyle, PrintStyledContent, StyledContent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::prelude::IntoCrossterm;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

/// Where the last frame is, relative to the cursor.
#[derive(Debug, Default)]
pub struct InlineScreen {
    /// The last frame written (None: write it whole).
    prev: Option<Buffer>,
    /// The frame's row the cursor was left on.
    cursor_row: u16,
}

/// Begin / end a synchronized update (DEC mode 2026): terminals that know it
/// show the whole frame at once.
const SYNC_BEGIN: &str = "\x1b[?2026h";
const SYNC_END: &str = "\x1b[?2026l";

impl InlineScreen {
    /// Nothing written yet; the cursor is at the start of a line of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget the last frame: the next one is written whole, starting from
    /// the frame's top as the cursor row says (after another program had the
    /// screen and gave it back unchanged).
    pub fn invalidate(&mut self) {
        self.prev = None;
    }

    /// Write `history` (the rows that now belong to the scrollback) and then
    /// `frame` below them, replacing the last frame; the cursor goes to
    /// `cursor` (a position in the frame) or is hidden. `clear` first clears
    /// the screen (after a resize, or a new conversation): the frame's old
    /// position means nothing any more.
    pub fn draw(
        &mut self,
        out: &mut impl Write,
        history: &[Line<'_>],
        frame: &Buffer,
        cursor: Option<(u16, u16)>,
        clear: bool,
    ) -> std::io::Result<()> {
        let mut s: Vec<u8> = Vec::with_capacity(4096);
        s.extend_from_slice(SYNC_BEGIN.as_bytes());
        s.extend_from_slice(b"\x1b[?25l");
        if clear {
            s.extend_from_slice(b"\x1b[H\x1b[2J");
            self.prev = None;
        } else {
            up(&mut s, self.cursor_row);
            s.push(b'\r');
        }
        let width = frame.area.width;
        let height = frame.area.height;
        // The row the cursor is on, in the frame.
        let mut at: u16;
        let whole = !history.is_empty() || self.prev.as_ref().is_none_or(|p| p.area != frame.area);
        if whole {
            // Clear the old frame (and anything below it), then write.
            s.extend_from_slice(b"\x1b[J");
            for line in history {
                write_line(&mut s, line, width)?;
                s.extend_from_slice(b"\r\n");
            }
            for y in 0..height {
                write_row(&mut s, frame, y)?;
                if y + 1 < height {
                    s.extend_from_slice(b"\r\n");
                }
            }
            at = height.saturating_sub(1);
        } else {
            at = 0;
            let prev = self.prev.as_ref().map(|p| &p.content);
            let w = usize::from(width);
            for y in 0..height {
                let row = usize::from(y) * w..usize::from(y + 1) * w;
                if prev.is_some_and(|p| p[row.clone()] == frame.content[row]) {
                    continue;
                }
                down(&mut s, y - at);
                at = y;
                s.extend_from_slice(b"\r\x1b[2K");
                write_row(&mut s, frame, y)?;
            }
        }
        let (cx, cy) = cursor.unwrap_or((0, height.saturating_sub(1)));
        let cy = cy.min(height.saturating_sub(1));
        if cy < at {
            up(&mut s, at - cy);
        } else {
            down(&mut s, cy - at);
        }
        write!(s, "\x1b[{}G", cx + 1)?;
        if cursor.is_some() {
            s.extend_from_slice(b"\x1b[?25h");
        }
        s.extend_from_slice(SYNC_END.as_bytes());
        out.write_all(&s)?;
        out.flush()?;
        self.cursor_row = cy;
        self.prev = Some(frame.clone());
        Ok(())
    }

    /// The session is ending: the frame goes, `history` is written where it
    /// was, and the cursor is left at the start of the line below.
    pub fn finish(&mut self, out: &mut impl Write, history: &[Line<'_>]) -> std::io::Result<()> {
        let mut s: Vec<u8> = Vec::new();
        up(&mut s, self.cursor_row);
        s.extend_from_slice(b"\r\x1b[J");
        let width = self.prev.as_ref().map_or(80, |p| p.area.width);
        for line in history {
            write_line(&mut s, line, width)?;
            s.extend_from_slice(b"\r\n");
        }
        s.extend_from_slice(b"\x1b[?25h");
        out.write_all(&s)?;
        out.flush()?;
        self.prev = None;
        self.cursor_row = 0;
        Ok(())
    }
}

fn up(s: &mut Vec<u8>, n: u16) {
    if n > 0 {
        let _ = write!(s, "\x1b[{n}A");
    }
}

fn down(s: &mut Vec<u8>, n: u16) {
    if n > 0 {
        let _ = write!(s, "\x1b[{n}B");
    }
}

/// `line` as it shows at `width`: styled text, nothing past the width.
pub fn write_line(s: &mut Vec<u8>, line: &Line<'_>, width: u16) -> std::io::Result<()> {
    let mut buf = Buffer::empty(Rect::new(0, 0, width.max(1), 1));
    buf.set_line(0, 0, line, width.max(1));
    write_row(s, &buf, 0)
}

/// Row `y` of `buf` as styled text: runs of one style, the cells a wide
/// character covers skipped, trailing blanks left out (a selection of the
/// line picks up no padding).
pub fn write_row(s: &mut Vec<u8>, buf: &Buffer, y: u16) -> std::io::Result<()> {
    let area = buf.area;
    let cells: Vec<_> = (area.left()..area.right()).map(|x| &buf[(x, area.y + y)]).collect();
    let blank = |c: &&ratatui::buffer::Cell| {
        let marks = Modifier::REVERSED | Modifier::UNDERLINED | Modifier::CROSSED_OUT;
        (c.symbol() == " " || c.symbol().is_empty()) && c.bg == Color::Reset && !c.modifier.intersects(marks)
    };
    let end = cells.iter().rposition(|c| !blank(c)).map_or(0, |i| i + 1);
    let mut run = String::new();
    let mut run_style: Option<Style> = None;
    let mut skip = 0usize;
    let flush = |s: &mut Vec<u8>, run: &mut String, style: Option<Style>| -> std::io::Result<()> {
        if run.is_empty() {
            return Ok(());
        }
        let style: ContentStyle = style.unwrap_or_default().into_crossterm();
        crossterm::queue!(s, PrintStyledContent(StyledContent::new(style, run.as_str())))?;
        run.clear();
        Ok(())
    };
    for cell in &cells[..end] {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let symbol = if cell.symbol().is_empty() { " " } else { cell.symbol() };
        skip = unicode_width::UnicodeWidthStr::width(symbol).saturating_sub(1);
        let style = cell.style();
        if run_style != Some(style) {
            flush(s, &mut run, run_style)?;
            run_style = Some(style);
        }
        run.push_str(symbol);
    }
    flush(s, &mut run, run_style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Stylize;
    use ratatui::text::Span;

    fn frame(rows: &[&str]) -> Buffer {
        let mut b = Buffer::empty(Rect::new(0, 0, 20, rows.len() as u16));
        for (y, r) in rows.iter().enumerate() {
            b.set_string(0, y as u16, r, Style::default());
        }
        b
    }

    fn screen(bytes: &[u8]) -> vt100::Parser {
        let mut p = vt100::Parser::new(6.try_into().unwrap(), 20.try_into().unwrap(), 100);
        p.process(bytes);
        p
    }

    #[test]
    fn history_goes_above_the_frame_and_the_frame_is_redrawn_in_place() {
        let mut out = Vec::new();
        let mut s = InlineScreen::new();
        out.extend_from_slice(b"$ tern\r\n");
        s.draw(&mut out, &[Line::from("hello")], &frame(&["> ", "status"]), Some((2, 0)), false).unwrap();
        s.draw(&mut out, &[], &frame(&["> ab", "status"]), Some((4, 0)), false).unwrap();
        s.draw(&mut out, &[Line::from("answer")], &frame(&["> ", "busy"]), Some((2, 0)), false).unwrap();
        let p = screen(&out);
        let text = p.screen().contents();
        assert_eq!(text.trim_end(), "$ tern\nhello\nanswer\n>\nbusy", "{text:?}");
        assert_eq!(p.screen().cursor_position(), (3, 2));
    }

    #[test]
    fn a_frame_that_shrinks_leaves_nothing_behind() {
        let mut out = Vec::new();
        let mut s = InlineScreen::new();
        s.draw(&mut out, &[], &frame(&["a", "b", "c", "status"]), None, false).unwrap();
        s.draw(&mut out, &[], &frame(&["x", "status"]), None, false).unwrap();
        let text = screen(&out).screen().contents();
        assert_eq!(text.trim_end(), "x\nstatus", "{text:?}");
    }

    #[test]
    fn history_longer_than_the_screen_scrolls_into_the_scrollback() {
        let mut out = Vec::new();
        let mut s = InlineScreen::new();
        let lines: Vec<Line> = (0..10).map(|i| Line::from(format!("line {i}"))).collect();
        s.draw(&mut out, &lines, &frame(&["> ", "status"]), Some((2, 0)), false).unwrap();
        let mut p = screen(&out);
        assert_eq!(p.screen().contents().trim_end(), "line 6\nline 7\nline 8\nline 9\n>\nstatus");
        p.screen_mut().set_scrollback(6);
        assert!(p.screen().contents().starts_with("line 0\nline 1"), "{}", p.screen().contents());
    }

    #[test]
    fn only_changed_rows_are_written_again() {
        let mut s = InlineScreen::new();
        let mut out = Vec::new();
        s.draw(&mut out, &[], &frame(&["unchanged row", "> a", "status"]), Some((3, 1)), false).unwrap();
        let mut again = Vec::new();
        s.draw(&mut again, &[], &frame(&["unchanged row", "> ab", "status"]), Some((4, 1)), false).unwrap();
        let again = String::from_utf8(again).unwrap();
        assert!(!again.contains("unchanged") && !again.contains("status") && again.contains("ab"), "{again:?}");
        out.extend_from_slice(again.as_bytes());
        assert_eq!(screen(&out).screen().contents().trim_end(), "unchanged row\n> ab\nstatus");
    }

    #[test]
    fn styles_and_wide_characters_come_through() {
        let mut s = Vec::new();
        let line = Line::from(vec![Span::raw("a"), Span::raw("界").fg(Color::Red), Span::raw("b").bold()]);
        write_line(&mut s, &line, 10).unwrap();
        let mut p = vt100::Parser::new(1.try_into().unwrap(), 10.try_into().unwrap(), 0);
        p.process(&s);
        assert_eq!(p.screen().contents(), "a界b");
        assert_eq!(p.screen().cell(0, 1).unwrap().fgcolor(), vt100::Color::Idx(1));
        assert!(p.screen().cell(0, 3).unwrap().bold());
        assert!(!String::from_utf8(s).unwrap().ends_with(' '));
    }

    #[test]
    fn finishing_removes_the_frame_and_keeps_the_history() {
        let mut out = Vec::new();
        let mut s = InlineScreen::new();
        s.draw(&mut out, &[Line::from("kept")], &frame(&["> ", "status"]), Some((2, 0)), false).unwrap();
        s.finish(&mut out, &[Line::from("last words")]).unwrap();
        out.extend_from_slice(b"summary");
        let text = screen(&out).screen().contents();
        assert_eq!(text.trim_end(), "kept\nlast words\nsummary", "{text:?}");
    }
}
