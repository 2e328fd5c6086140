//! A one-line text field inside a pane (the permission prompt's "what to do
//! instead", a question's own answer): Enter sends, Esc goes back, the usual
//! editing keys, and a view scrolled so the cursor (a reversed cell) shows.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::text_buffer::TextBuffer;
use super::wrap::{measured, str_width};
use crate::theme::Theme;

/// What a key did to the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldKey {
    /// Enter: the text, trimmed.
    Submit(String),
    /// Esc: leave the field.
    Cancel,
    /// Anything else (edited, moved, or ignored).
    Edited,
}

/// A one-line field.
#[derive(Debug, Default)]
pub(crate) struct LineField {
    buffer: TextBuffer,
}

impl LineField {
    /// The text typed.
    pub(crate) fn text(&self) -> &str {
        self.buffer.text()
    }

    /// Replace the text (the cursor goes to its end).
    pub(crate) fn set_text(&mut self, text: &str) {
        self.buffer.set_text(text.to_string());
    }

    /// A key.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> FieldKey {
        let field = &mut self.buffer;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let cursor = field.cursor();
        match key.code {
            KeyCode::Enter => return FieldKey::Submit(field.text().trim().to_string()),
            KeyCode::Esc => return FieldKey::Cancel,
            KeyCode::Char('u') if ctrl => field.delete(0..cursor),
            KeyCode::Char('w') if ctrl => field.delete(field.word_start_before(cursor)..cursor),
            KeyCode::Char(c) if !ctrl => field.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => field.delete(field.prev_char(cursor)..cursor),
            KeyCode::Delete => field.delete(cursor..field.next_char(cursor)),
            KeyCode::Left => field.set_cursor(field.prev_char(cursor)),
            KeyCode::Right => field.set_cursor(field.next_char(cursor)),
            KeyCode::Home => field.set_cursor(0),
            KeyCode::End => field.set_cursor(field.text().len()),
            _ => {}
        }
        FieldKey::Edited
    }

    /// A paste: newlines and other control characters become spaces.
    pub(crate) fn paste(&mut self, text: &str) {
        let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        self.buffer.insert(&flat);
    }

    /// The field as one row of `w` columns after `indent`, with `placeholder` while empty.
    pub(crate) fn line(&self, indent: &'static str, w: usize, placeholder: &str, theme: &Theme) -> Line<'static> {
        let room = w.saturating_sub(indent.len() + 1).max(1);
        let text = self.buffer.text();
        if text.is_empty() {
            return Line::from(vec![
                Span::raw(indent),
                Span::styled(" ", theme.selected()),
                Span::styled(placeholder.to_string(), theme.dim()),
            ]);
        }
        let (before, after) = text.split_at(self.buffer.cursor());
        // Keep the tail of `before` that fits, so the cursor stays in view.
        let mut shown = String::new();
        let mut col = 0;
        let before_graphemes: Vec<(&str, usize)> = measured(before).map(|(_, g, w)| (g, w)).collect();
        for (g, w) in before_graphemes.into_iter().rev() {
            col += w;
            if col > room {
                break;
            }
            shown.insert_str(0, g);
        }
        let mut graphemes = measured(after);
        let at_cursor = graphemes.next().map_or(" ".to_string(), |(_, g, _)| g.to_string());
        let left = room.saturating_sub(str_width(&shown) + 1);
        let rest: String = graphemes
            .scan(0, |used, (_, g, w)| {
                *used += w;
                (*used <= left).then_some(g)
            })
            .collect();
        Line::from(vec![
            Span::raw(indent),
            Span::styled(shown, theme.user()),
            Span::styled(at_cursor, theme.selected()),
            Span::styled(rest, theme.user()),
        ])
    }
}
