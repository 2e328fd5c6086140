//! The composer's text and cursor, and the edits keys make to them. Pure
//! string work: no keys, no drawing. The cursor is a byte index that always
//! sits on a char boundary.

use std::ops::Range;

/// Text with a cursor.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextBuffer {
    text: String,
    cursor: usize,
}

/// Word-motion classes: a word is a run of one class, spaces between words are skipped.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum CharClass {
    Space,
    Word,
    Punct,
}

/// The class of `c` for word motions (here and vim's).
pub(crate) fn class(c: char) -> CharClass {
    if c.is_whitespace() {
        CharClass::Space
    } else if c.is_alphanumeric() || c == '_' {
        CharClass::Word
    } else {
        CharClass::Punct
    }
}

impl TextBuffer {
    /// The text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's byte index.
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text; the cursor goes to the end.
    pub(crate) fn set_text(&mut self, text: String) {
        self.cursor = text.len();
        self.text = text;
    }

    /// Moves the cursor, clamped to the text and snapped back to a char boundary.
    pub(crate) fn set_cursor(&mut self, pos: usize) {
        self.cursor = tern_protocol::text::floor_char_boundary(&self.text, pos);
    }

    /// Inserts at the cursor and moves past the insertion.
    pub(crate) fn insert(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// Deletes a byte range (on char boundaries); the cursor follows the text it was in.
    pub(crate) fn delete(&mut self, range: Range<usize>) {
        let Range { start, end } = range;
        if start >= end || end > self.text.len() {
            return;
        }
        self.text.replace_range(start..end, "");
        if self.cursor >= end {
            self.cursor -= end - start;
        } else if self.cursor > start {
            self.cursor = start;
        }
    }

    /// The start of the char before `pos`.
    pub(crate) fn prev_char(&self, pos: usize) -> usize {
        prev_char(&self.text, pos)
    }

    /// The end of the char at `pos`.
    pub(crate) fn next_char(&self, pos: usize) -> usize {
        next_char(&self.text, pos)
    }

    /// The start of the line holding `pos`.
    pub(crate) fn line_start(&self, pos: usize) -> usize {
        line_start(&self.text, pos)
    }

    /// The end of the line holding `pos` (before its newline).
    pub(crate) fn line_end(&self, pos: usize) -> usize {
        line_end(&self.text, pos)
    }

    /// Where a backward word motion from `pos` lands: over spaces, then over one run of a class.
    pub(crate) fn word_start_before(&self, pos: usize) -> usize {
        word_start_before(&self.text, pos)
    }

    /// Where a forward word motion from `pos` lands: over spaces, then to the end of one run of a class.
    pub(crate) fn word_end_after(&self, pos: usize) -> usize {
        let mut chars = self.text[pos..].char_indices().peekable();
        while chars.next_if(|(_, c)| class(*c) == CharClass::Space).is_some() {}
        let Some(&(_, first)) = chars.peek() else {
            return self.text.len();
        };
        let run = class(first);
        let mut at = self.text.len();
        while chars.next_if(|(_, c)| class(*c) == run).is_some() {}
        if let Some(&(i, _)) = chars.peek() {
            at = pos + i;
        }
        at
    }
}

/// The start of the char before `pos` in `text`.
pub(crate) fn prev_char(text: &str, pos: usize) -> usize {
    text[..pos].char_indices().next_back().map_or(0, |(i, _)| i)
}

/// The end of the char at `pos` in `text`.
pub(crate) fn next_char(text: &str, pos: usize) -> usize {
    text[pos..].chars().next().map_or(pos, |c| pos + c.len_utf8())
}

/// The start of the line holding `pos` in `text`.
pub(crate) fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// The end of the line holding `pos` in `text` (before its newline).
pub(crate) fn line_end(text: &str, pos: usize) -> usize {
    text[pos..].find('\n').map_or(text.len(), |i| pos + i)
}

/// Where a backward word motion from `pos` lands in `text`: over spaces, then over one run of a class.
pub(crate) fn word_start_before(text: &str, pos: usize) -> usize {
    let mut chars = text[..pos].char_indices().rev().peekable();
    while chars.next_if(|(_, c)| class(*c) == CharClass::Space).is_some() {}
    let Some(&(_, first)) = chars.peek() else {
        return 0;
    };
    let run = class(first);
    let mut at = pos;
    while let Some((i, _)) = chars.next_if(|(_, c)| class(*c) == run) {
        at = i;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(text: &str, cursor: usize) -> TextBuffer {
        let mut b = TextBuffer::default();
        b.set_text(text.to_string());
        b.set_cursor(cursor);
        b
    }

    #[test]
    fn word_motions_skip_spaces_then_one_run() {
        let b = buf("let x = foo.bar(  baz", 0);
        let t = b.text();
        assert_eq!(&t[b.word_start_before(t.len())..], "baz");
        assert_eq!(&t[b.word_start_before(16)..16], "(");
        assert_eq!(&t[b.word_start_before(15)..15], "bar");
        assert_eq!(&t[..b.word_end_after(0)], "let");
        assert_eq!(&t[3..b.word_end_after(3)], " x");
        assert_eq!(b.word_start_before(0), 0);
        assert_eq!(b.word_end_after(t.len()), t.len());
    }

    #[test]
    fn lines_and_chars() {
        let b = buf("ab\ncdé\nf", 0);
        assert_eq!(b.line_start(5), 3);
        assert_eq!(b.line_end(3), 7);
        assert_eq!(b.prev_char(7), 5);
        assert_eq!(b.next_char(5), 7);
        assert_eq!(b.line_end(8), 9);
    }

    #[test]
    fn delete_keeps_the_cursor_in_place() {
        let mut b = buf("hello world", 11);
        b.delete(0..6);
        assert_eq!((b.text(), b.cursor()), ("world", 5));
        b.set_cursor(2);
        b.delete(1..4);
        assert_eq!((b.text(), b.cursor()), ("wd", 1));
    }
}
