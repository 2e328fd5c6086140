//! The composer's vim mode: operators with motions and counts, the
//! register, undo and redo, and `.`, through the composer's keys.

use crossterm::event::{KeyCode, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::layout::Rect;
use tern_tui::theme::Theme;
use tern_tui::widgets::composer::{Composer, ComposerAction, VimMode};

use crate::support::{buffer, buffer_text, ctrl, key, key_with};

/// A composer in vim's normal mode holding `text`, the cursor at its start.
fn vim(text: &str) -> Composer {
    let mut c = Composer::new(Vec::new(), Vec::new());
    c.set_vim(true);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            c.handle_key(key_with(KeyCode::Enter, KeyModifiers::ALT));
        }
        for ch in line.chars() {
            c.handle_key(key(KeyCode::Char(ch)));
        }
    }
    c.handle_key(key(KeyCode::Esc));
    assert_eq!(c.vim_mode(), Some(VimMode::Normal));
    press(&mut c, "gg0");
    c
}

/// Press keys: `<Esc>` is Esc, `<C-r>` Ctrl+R, anything else a char.
fn press(c: &mut Composer, keys: &str) {
    let mut rest = keys;
    while !rest.is_empty() {
        let (k, len) = if rest.starts_with("<Esc>") {
            (key(KeyCode::Esc), 5)
        } else if rest.starts_with("<C-r>") {
            (ctrl('r'), 5)
        } else {
            let ch = rest.chars().next().unwrap();
            (key(KeyCode::Char(ch)), ch.len_utf8())
        };
        c.handle_key(k);
        rest = &rest[len..];
    }
}

/// The text after `keys`, with `|` where the cursor is (typed with `i`).
fn after(text: &str, keys: &str) -> String {
    let mut c = vim(text);
    press(&mut c, keys);
    if c.vim_mode() == Some(VimMode::Insert) {
        press(&mut c, "<Esc>l");
    }
    press(&mut c, "i|<Esc>");
    c.text()
}

/// Each case: the text, the keys pressed from its start, the text after
/// them with `|` at the cursor.
fn check(cases: &[(&str, &str, &str)]) {
    for (text, keys, want) in cases {
        assert_eq!(after(text, keys), *want, "{text:?} then {keys}");
    }
}

#[test]
fn operators_take_what_their_motions_cover() {
    let cases = [
        ("one two three", "dw", "|two three"),
        ("one two three", "de", "| two three"),
        ("one two three", "wd$", "one| "),
        ("one two three", "wd0", "|two three"),
        ("one two three", "$d0", "|e"),
        ("one two three", "wdb", "|two three"),
        ("one two three", "wdl", "one |wo three"),
        ("one two three", "wdh", "one|two three"),
        ("  one two", "$d^", "  |o"),
        ("one two three", "wdiw", "one | three"),
        ("one two three", "wdaw", "one |three"),
        ("one two three", "cwONE<Esc>", "ON|E two three"),
        ("one two three", "wciwTWO<Esc>", "one TW|O three"),
        ("one two three", "wcawX<Esc>", "one |Xthree"),
        ("one two\nthree", "wdw", "one| \nthree"),
        ("one two", "ywP", "one| one two"),
        ("one two", "yep", "oon|ene two"),
        ("one two", "D", "|"),
        ("one two", "wCtoo<Esc>", "one to|o"),
        ("abc", "sX<Esc>", "|Xbc"),
        ("abc", "lx", "a|c"),
        ("abc", "$X", "a|c"),
        ("one two", "ex", "on| two"),
        ("one two", "$bx", "one |wo"),
        ("ab\ncd", "jx", "ab\n|d"),
    ];
    check(&cases);
}

#[test]
fn whole_lines_with_doubled_operators_and_line_motions() {
    let cases = [
        ("a\nb\nc\nd", "dd", "|b\nc\nd"),
        ("a\nb\nc\nd", "jdd", "a\n|c\nd"),
        ("a\nb\nc\nd", "Gdd", "a\nb\n|c"),
        ("a\nb\nc\nd", "dj", "|c\nd"),
        ("a\nb\nc\nd", "jdk", "|c\nd"),
        ("a\nb\nc\nd", "jdG", "|a"),
        ("a\nb\nc\nd", "Gdgg", "|"),
        ("a\nb\nc", "ccX<Esc>", "|X\nb\nc"),
        ("a\nb\nc", "jSX<Esc>", "a\n|X\nc"),
        ("a\nb\nc", "yyp", "a\n|a\nb\nc"),
        ("a\nb\nc", "jyyP", "a\n|b\nb\nc"),
        ("a\nb", "Yjp", "a\nb\n|a"),
        ("a\nb\nc", "ddp", "b\n|a\nc"),
        ("a\nb\nc", "Gx", "a\nb\n|"),
        ("a\nb\nc", "Gggx", "|\nb\nc"),
        ("a\nb\nc", "2Gx", "a\n|\nc"),
        ("a\nb", "oc<Esc>", "a\n|c\nb"),
        ("a\nb", "Oc<Esc>", "|c\na\nb"),
    ];
    check(&cases);
}

#[test]
fn counts_repeat_motions_and_multiply_operators() {
    let cases = [
        ("one two three four", "2wx", "one two |hree four"),
        ("one two three four", "d2w", "|three four"),
        ("one two three four", "2dw", "|three four"),
        ("one two three four", "2d2w", "|"),
        ("one two three four", "3x", "| two three four"),
        ("a\nb\nc\nd", "2dd", "|c\nd"),
        ("a\nb\nc\nd", "d2j", "|d"),
        ("a\nb\nc\nd", "5dd", "|"),
        ("ab", "yl3p", "aaa|ab"),
        ("one two", "$10X", "|o"),
    ];
    check(&cases);
}

#[test]
fn undo_redo_and_repeat() {
    let cases = [
        ("one two three", "dwdwu", "|two three"),
        ("one two three", "dwdwuu", "|one two three"),
        ("one two three", "dwdwuu<C-r>", "|two three"),
        ("one two three", "dwu<C-r><C-r>", "|two three"),
        // What insert mode typed is one step.
        ("one", "A two three<Esc>u", "on|e"),
        ("one", "cwuno<Esc>u", "|one"),
        // A change after an undo drops the redo.
        ("one two", "xuxu<C-r><C-r>", "|ne two"),
        ("one two three", "dw.", "|three"),
        ("a\nb\nc\nd", "dd.", "|c\nd"),
        ("one", "A!<Esc>.", "one!|!"),
        ("one two three", "cwX<Esc>w.", "X |X three"),
        ("a b c", "x..", "| c"),
        // Moves are not changes: `.` does the last change, `u` undoes it.
        ("one two three", "xw.", "ne |wo three"),
        ("one two three", "xwu", "|one two three"),
    ];
    check(&cases);
}

#[test]
fn the_mode_line_shows_a_command_being_typed() {
    let mut c = vim("one two");
    let title = |c: &Composer| {
        let mut buf = buffer(40, 3);
        c.render(Rect::new(0, 0, 40, 3), &mut buf, &Theme::default());
        buffer_text(&buf).lines().next().unwrap().to_string()
    };
    assert!(title(&c).contains(" NORMAL "), "{}", title(&c));
    press(&mut c, "2d");
    assert!(title(&c).contains(" NORMAL 2d "), "{}", title(&c));
    press(&mut c, "<Esc>");
    assert!(title(&c).contains(" NORMAL ─"), "Esc drops it: {}", title(&c));
    assert_eq!(c.text(), "one two");
    press(&mut c, "i");
    assert!(title(&c).contains(" INSERT "), "{}", title(&c));
}

#[test]
fn enter_sends_from_normal_mode_and_the_history_starts_afresh() {
    let mut c = vim("one two");
    press(&mut c, "dw");
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Submit("two".into()));
    // Nothing to undo into the empty composer: the sent text stays sent.
    press(&mut c, "u");
    assert_eq!(c.text(), "");
    // Esc with nothing typed still interrupts.
    assert_eq!(c.handle_key(key(KeyCode::Esc)), ComposerAction::Interrupt);
}
