//! Where vim's motions and text objects land, as plain functions over the
//! text and a byte position (always on a char boundary). No keys, no state:
//! [`super::Vim`] turns keys into these and the ranges into edits.

use std::ops::Range;

use super::Operator;
/// `b`: the start of this word, or of the one before when already at its start.
pub(crate) use crate::widgets::text_buffer::word_start_before as word_start;
use crate::widgets::text_buffer::{CharClass, class};
pub(crate) use crate::widgets::text_buffer::{line_end, line_start, next_char, prev_char};

/// How an operator takes the text between the cursor and a motion's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Up to the target, not including it (`w`, `b`, `h`, `l`, `0`, `$`).
    Exclusive,
    /// Up to and including the char at the target (`e`).
    Inclusive,
    /// Whole lines, from the cursor's to the target's (`j`, `k`, `gg`, `G`).
    Linewise,
}

/// A motion's target and how an operator reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// Where the cursor goes.
    pub pos: usize,
    /// How an operator takes the text up to it.
    pub reach: Reach,
}

/// Where a normal-mode cursor may rest: on a char, not after the last one
/// of its line (an empty line has only its start).
pub(crate) fn on_char(text: &str, pos: usize) -> usize {
    let start = line_start(text, pos);
    if pos > start && pos >= line_end(text, pos) { prev_char(text, line_end(text, pos)) } else { pos }
}

/// `w`: the start of the next word (over the rest of this one, then spaces and line breaks).
pub(crate) fn next_word_start(text: &str, pos: usize) -> usize {
    let mut chars = text[pos..].char_indices().peekable();
    if let Some(&(_, c)) = chars.peek() {
        let run = class(c);
        if run != CharClass::Space {
            while chars.next_if(|(_, c)| class(*c) == run).is_some() {}
        }
    }
    while chars.next_if(|(_, c)| class(*c) == CharClass::Space).is_some() {}
    chars.peek().map_or(text.len(), |(i, _)| pos + i)
}

/// `e`: the last char of this word, or of the next one when already on its last char.
pub(crate) fn word_end(text: &str, pos: usize) -> usize {
    let from = next_char(text, pos);
    let mut chars = text[from..].char_indices().peekable();
    while chars.next_if(|(_, c)| class(*c) == CharClass::Space).is_some() {}
    let Some(&(_, first)) = chars.peek() else { return pos };
    let run = class(first);
    let mut last = pos;
    while let Some((i, _)) = chars.next_if(|(_, c)| class(*c) == run) {
        last = from + i;
    }
    last
}

/// `^`: the first char of the line that is not a space.
pub(crate) fn first_non_blank(text: &str, pos: usize) -> usize {
    let start = line_start(text, pos);
    let line = &text[start..line_end(text, pos)];
    start + line.find(|c: char| !c.is_whitespace()).unwrap_or(line.len())
}

/// The start of line `n` (1-based), or of the last line when there are fewer.
pub(crate) fn start_of_line(text: &str, n: usize) -> usize {
    let mut at = 0;
    for _ in 1..n {
        match text[at..].find('\n') {
            Some(i) => at += i + 1,
            None => break,
        }
    }
    at
}

/// `count` lines down (or up) from the line holding `pos`: the start of
/// that line, or `None` when there is no line there (then nothing moves).
pub(crate) fn line_below(text: &str, pos: usize, count: usize, down: bool) -> Option<usize> {
    let mut at = line_start(text, pos);
    for _ in 0..count {
        if down {
            at += text[at..].find('\n')? + 1;
        } else {
            at = line_start(text, at.checked_sub(1)?);
        }
    }
    Some(at)
}

/// The bytes whole lines from the one holding `a` to the one holding `b`
/// take, with one line break (the one after, or before the last line), and
/// the lines' text without it.
pub(crate) fn whole_lines(text: &str, a: usize, b: usize) -> (Range<usize>, Range<usize>) {
    let (start, end) = (line_start(text, a.min(b)), line_end(text, a.max(b)));
    let cut = if end < text.len() { start..end + 1 } else { start.saturating_sub(usize::from(start > 0))..end };
    (cut, start..end)
}

/// `iw` (`around`: `aw`): the word under `pos` — or the run of spaces —
/// within its line; `aw` adds the spaces after it (or, when there are none,
/// those before it).
pub(crate) fn word_object(text: &str, pos: usize, around: bool) -> Option<Range<usize>> {
    let (lo, hi) = (line_start(text, pos), line_end(text, pos));
    let c = text[pos..hi].chars().next()?;
    let run = class(c);
    let same = |c: char| class(c) == run;
    let start = lo + text[lo..pos].rfind(|c: char| !same(c)).map_or(0, |i| i + next_len(&text[lo..], i));
    let end = pos + text[pos..hi].find(|c: char| !same(c)).unwrap_or(hi - pos);
    if !around || run == CharClass::Space {
        return Some(start..end);
    }
    let spaces_after = text[end..hi].find(|c: char| !c.is_whitespace()).unwrap_or(hi - end);
    if spaces_after > 0 {
        return Some(start..end + spaces_after);
    }
    let spaces_before =
        text[lo..start].chars().rev().take_while(|c| c.is_whitespace()).map(char::len_utf8).sum::<usize>();
    Some(start - spaces_before..end)
}

/// The byte length of the char at `i` in `s`.
fn next_len(s: &str, i: usize) -> usize {
    s[i..].chars().next().map_or(1, char::len_utf8)
}

/// Where motion `c` (repeated `count` times) goes from `cursor`, for moving
/// or for `operator`; `counted`: a count was typed (`5G` is line 5, `G` the last).
pub(crate) fn target(
    text: &str,
    cursor: usize,
    c: char,
    count: usize,
    counted: bool,
    operator: Option<Operator>,
) -> Option<Target> {
    let exclusive = |pos| Some(Target { pos, reach: Reach::Exclusive });
    let repeat = |f: &dyn Fn(usize) -> usize| (0..count).fold(cursor, |at, _| f(at));
    match c {
        'h' => exclusive(back(text, cursor, count)),
        'l' => exclusive(advance(text, cursor, count)),
        '0' => exclusive(line_start(text, cursor)),
        '^' => exclusive(first_non_blank(text, cursor)),
        '$' => exclusive(line_end(text, cursor)),
        'b' => exclusive(repeat(&|at| word_start(text, at))),
        // `cw` on a word changes to its end, as `ce` does (the spaces after it stay).
        'w' if operator == Some(Operator::Change) && text[cursor..].starts_with(|c: char| !c.is_whitespace()) => {
            Some(Target { pos: repeat(&|at| word_end(text, at)), reach: Reach::Inclusive })
        }
        'w' => {
            let mut at = cursor;
            let mut from = cursor;
            for _ in 0..count {
                from = at;
                at = next_word_start(text, at);
            }
            // With an operator, a word at the end of a line ends there (the next line is not taken).
            if operator.is_some() {
                at = at.min(line_end(text, from).max(next_char(text, from)));
            }
            exclusive(at)
        }
        'e' => Some(Target { pos: repeat(&|at| word_end(text, at)), reach: Reach::Inclusive }),
        'j' | 'k' => Some(Target { pos: line_below(text, cursor, count, c == 'j')?, reach: Reach::Linewise }),
        'g' => Some(Target { pos: start_of_line(text, count), reach: Reach::Linewise }),
        'G' => {
            let pos = if counted { start_of_line(text, count) } else { line_start(text, text.len()) };
            Some(Target { pos, reach: Reach::Linewise })
        }
        _ => None,
    }
}

/// `count` chars right of `pos`, not past the end of its line.
pub(crate) fn advance(text: &str, pos: usize, count: usize) -> usize {
    let end = line_end(text, pos);
    (0..count).fold(pos, |at, _| next_char(text, at).min(end))
}

/// `count` chars left of `pos`, not before the start of its line.
pub(crate) fn back(text: &str, pos: usize, count: usize) -> usize {
    let start = line_start(text, pos);
    (0..count).fold(pos, |at, _| prev_char(text, at).max(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_motions_land_where_vim_lands() {
        let t = "let x = foo.bar(  baz";
        assert_eq!(&t[next_word_start(t, 0)..], "x = foo.bar(  baz");
        assert_eq!(&t[next_word_start(t, 8)..], ".bar(  baz");
        assert_eq!(next_word_start(t, 18), t.len());
        assert_eq!(&t[word_end(t, 0)..], "t x = foo.bar(  baz");
        assert_eq!(&t[word_end(t, 2)..], "x = foo.bar(  baz");
        assert_eq!(&t[word_start(t, 11)..], "foo.bar(  baz");
        assert_eq!(word_start(t, 0), 0);
        assert_eq!(&"a\n  b"[next_word_start("a\n  b", 0)..], "b");
    }

    #[test]
    fn word_objects_take_the_word_and_its_spaces() {
        let t = "one two  three\nfour";
        assert_eq!(&t[word_object(t, 5, false).unwrap()], "two");
        assert_eq!(&t[word_object(t, 5, true).unwrap()], "two  ");
        assert_eq!(&t[word_object(t, 10, true).unwrap()], "  three");
        assert_eq!(&t[word_object(t, 7, false).unwrap()], "  ");
        assert_eq!(word_object(t, t.len(), false), None);
        assert_eq!(&"é b"[word_object("é b", 0, false).unwrap()], "é");
    }

    #[test]
    fn lines_are_taken_with_one_line_break() {
        let t = "a\nb\nc";
        let (cut, lines) = whole_lines(t, 2, 2);
        assert_eq!((&t[cut], &t[lines]), ("b\n", "b"));
        let (cut, _) = whole_lines(t, 4, 4);
        assert_eq!(&t[cut], "\nc");
        assert_eq!(line_below(t, 0, 2, true), Some(4));
        assert_eq!(line_below(t, 4, 1, true), None);
        assert_eq!(line_below(t, 4, 2, false), Some(0));
        assert_eq!(start_of_line(t, 2), 2);
        assert_eq!(start_of_line(t, 9), 4);
        assert_eq!(first_non_blank("  x", 0), 2);
        assert_eq!(on_char("ab\n", 2), 1);
        assert_eq!(on_char("ab\n\n", 3), 3);
    }
}
