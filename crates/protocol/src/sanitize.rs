//! Making untrusted text safe to draw: model output, tool output and file
//! contents may hold ANSI escape sequences, carriage returns and other
//! control characters that would move the cursor or repaint the screen if
//! they reached the terminal. [`clean`] keeps newlines, expands tabs and drops
//! the rest.

use std::borrow::Cow;

use unicode_width::UnicodeWidthChar;

/// Columns between tab stops.
pub const TAB_WIDTH: usize = 4;

/// One diagnostic line as tern writes it on stderr: `tern: ` and the text,
/// cleaned (it quotes config files, server names and hook commands).
pub fn diagnostic(text: &str) -> String {
    format!("tern: {}", clean(text))
}

/// `text` without escape sequences or control characters: `\r\n` becomes
/// `\n`, text after a lone `\r` replaces its line (as a terminal shows a
/// progress bar), tabs expand to the next multiple of [`TAB_WIDTH`]
/// columns, and other control characters (C0, DEL, C1, bidi overrides) are
/// dropped. An escape sequence cut off at the end is dropped too. Borrows
/// when there is nothing to change.
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| (c.is_control() && c != '\n') || is_bidi_control(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    // Where the current line starts in `out`, for `\r` and tab stops.
    let mut line_start = 0;
    // A `\r` moved the cursor back: the next visible character starts
    // rewriting the line (nothing after it leaves the line as it was).
    let mut rewrite = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if rewrite && (c == '\t' || !c.is_control()) {
            out.truncate(line_start);
            rewrite = false;
        }
        match c {
            '\n' => {
                out.push('\n');
                line_start = out.len();
                rewrite = false;
            }
            '\r' => rewrite = true,
            '\t' => {
                let col: usize = out[line_start..].chars().map(|c| c.width().unwrap_or(0)).sum();
                let pad = TAB_WIDTH - col % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', pad));
            }
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Bidirectional embeddings, overrides and isolates: terminals that honour
/// them would show text in an order other than the one it has.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Skip the rest of an escape sequence whose ESC was just read.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ESC \.
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || c == '\u{9c}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        // nF sequences: intermediates then a final byte.
        Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
            for c in chars.by_ref() {
                if !('\u{20}'..='\u{2f}').contains(&c) {
                    break;
                }
            }
        }
        // Two-character sequences (ESC 7, ESC c, ...) or the end of the text.
        _ => {}
    }
}

/// Skip a CSI sequence after its introducer: parameters and intermediates up
/// to the final byte (`@` to `~`).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            // Not part of a CSI sequence: the sequence was malformed; drop
            // just this character rather than eating the text after it.
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(clean("hello\nworld"), Cow::Borrowed(_)));
    }

    #[test]
    fn strips_colours_and_cursor_moves() {
        assert_eq!(clean("\u{1b}[1;31merror\u{1b}[0m: x\u{1b}[2K"), "error: x");
        assert_eq!(clean("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{7}b"), "alinkb");
        assert_eq!(clean("cut \u{1b}[3"), "cut ");
        assert_eq!(clean("\u{1b}(Bx"), "x");
    }

    #[test]
    fn carriage_returns_overwrite_the_line() {
        assert_eq!(clean("a\r\nb"), "a\nb");
        assert_eq!(clean("10%\r50%\r100%\ndone"), "100%\ndone");
        assert_eq!(clean("10%\r"), "10%");
        assert_eq!(clean("a\rb\u{1b}[0m\n"), "b\n");
    }

    #[test]
    fn tabs_expand_to_stops() {
        assert_eq!(clean("a\tb\n\tc"), "a   b\n    c");
        assert_eq!(clean("abcd\te"), "abcd    e");
    }

    #[test]
    fn other_controls_are_dropped() {
        assert_eq!(clean("a\u{0}b\u{7}c\u{7f}d\u{85}e"), "abcde");
        assert_eq!(clean("x\u{202e}cba\u{2066}"), "xcba");
    }
}
