//! The composer: snapshots of what it draws, and its keys.

use crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::layout::Rect;
use tern_tui::theme::Theme;
use tern_tui::widgets::composer::{Composer, ComposerAction, SlashCommand};

use crate::support::{at_widths, buffer, buffer_text, ctrl, key, key_with};

fn commands() -> Vec<SlashCommand> {
    [
        ("help", "Show keys and commands"),
        ("clear", "Start a new conversation"),
        ("compact", "Summarise the conversation to free context"),
        ("model", "Choose the model"),
        ("mode", "Choose the permission mode"),
        ("memory", "Edit AGENTS.md memory files"),
        ("mcp", "Show MCP servers and their tools"),
        ("permissions", "Show and edit permission rules"),
        ("resume", "Resume an earlier session"),
        ("quit", "Leave tern"),
    ]
    .into_iter()
    .map(|(name, description)| SlashCommand { name: name.into(), description: description.into() })
    .collect()
}

fn files() -> Vec<String> {
    [
        "Cargo.toml",
        "README.md",
        "crates/tui/src/widgets/composer.rs",
        "crates/tui/src/main.rs",
        "src/domain/rules.rs",
        "src/lib.rs",
        "src/main.rs",
        "src/maintenance/runner.rs",
        "tests/main_rs_smoke.rs",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

fn composer() -> Composer {
    let mut c = Composer::new(commands(), vec!["first prompt".into(), "second prompt".into()]);
    c.set_files(files());
    c
}

fn type_text(c: &mut Composer, text: &str) {
    for ch in text.chars() {
        let action = if ch == '\n' {
            c.handle_key(key_with(KeyCode::Enter, KeyModifiers::SHIFT))
        } else {
            c.handle_key(key(KeyCode::Char(ch)))
        };
        assert_eq!(action, ComposerAction::Changed, "typing {ch:?}");
    }
}

/// The popup (if open) above the composer, and where the cursor goes.
fn draw(c: &Composer, width: u16) -> String {
    let theme = Theme::default();
    let popup = c.popup();
    let popup_height = popup.as_ref().map_or(0, |p| p.height());
    let height = c.desired_height(width);
    let mut buf = buffer(width, popup_height + height);
    if let Some(p) = &popup {
        p.render(Rect::new(0, 0, width, popup_height), &mut buf, &theme);
    }
    let cursor = c.render(Rect::new(0, popup_height, width, height), &mut buf, &theme);
    format!("{}cursor: {cursor:?}\n", buffer_text(&buf))
}

fn snapshot(c: &Composer) -> String {
    at_widths(|w| draw(c, w))
}

#[test]
fn empty_shows_the_placeholder() {
    assert_snapshot!(snapshot(&composer()));
}

#[test]
fn one_line() {
    let mut c = composer();
    type_text(&mut c, "fix the failing test in parser.rs");
    assert_snapshot!(snapshot(&c));
}

#[test]
fn multiline_text_wraps_at_the_width() {
    let mut c = composer();
    type_text(
        &mut c,
        "Refactor the config loader:\n- read the user file first, then the project file, and merge them key by key\n- keep comments when saving",
    );
    assert_snapshot!(snapshot(&c));
}

#[test]
fn cursor_follows_up_and_left() {
    let mut c = composer();
    type_text(&mut c, "first line here\nsecond line\nthird");
    c.handle_key(key(KeyCode::Up));
    c.handle_key(key(KeyCode::Up));
    for _ in 0..3 {
        c.handle_key(key(KeyCode::Right));
    }
    c.handle_key(key_with(KeyCode::Right, KeyModifiers::ALT));
    // After "first line" on the first row: the border and the prompt take three columns.
    let mut buf = buffer(80, 5);
    assert_eq!(c.render(Rect::new(0, 0, 80, 5), &mut buf, &Theme::default()), Some((3 + 10, 1)));
    assert_snapshot!(snapshot(&c));
}

#[test]
fn wide_chars_wrap_by_columns() {
    let mut c = composer();
    type_text(&mut c, "日本語のテキストも正しく折り返されるべきです。カーソルの位置も合っていること。");
    assert_snapshot!(snapshot(&c));
}

#[test]
fn tall_text_scrolls_to_the_cursor() {
    let mut c = composer();
    type_text(&mut c, &(1..=14).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n"));
    assert_eq!(c.desired_height(80), 12);
    let mut out = snapshot(&c);
    // Back up to the top: the view follows the cursor.
    for _ in 0..13 {
        c.handle_key(key(KeyCode::Up));
    }
    out.push_str(&format!("── after Up ×13, width 40 ──\n{}", draw(&c, 40)));
    assert_snapshot!(out);
}

#[test]
fn a_long_paste_collapses_to_a_placeholder() {
    let mut c = composer();
    type_text(&mut c, "why does this fail? ");
    let log: String = (1..=40).map(|i| format!("error[E{i:04}]: something went wrong\n")).collect();
    c.handle_paste(&log);
    type_text(&mut c, " and this ");
    c.handle_paste(&"x".repeat(1500));
    assert_snapshot!(snapshot(&c));
}

#[test]
fn slash_popup_filters_commands() {
    let mut c = composer();
    type_text(&mut c, "/m");
    let popup = c.popup().expect("popup open");
    let labels: Vec<&str> = popup.items.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["/model", "/mode", "/memory", "/mcp", "/compact", "/permissions", "/resume"]);
    assert_snapshot!(snapshot(&c));
}

#[test]
fn file_popup_ranks_fuzzy_matches() {
    let mut c = composer();
    type_text(&mut c, "look at @mainrs");
    let popup = c.popup().expect("popup open");
    assert_eq!(popup.items[0].0, "src/main.rs");
    c.handle_key(key(KeyCode::Down));
    assert_eq!(c.popup().unwrap().selected, 1);
    assert_snapshot!(snapshot(&c));
}

#[test]
fn a_long_popup_scrolls_with_the_selection() {
    let mut c = composer();
    type_text(&mut c, "/");
    for _ in 0..9 {
        c.handle_key(key(KeyCode::Down));
    }
    assert_eq!(c.popup().unwrap().selected, 9);
    assert_snapshot!(draw(&c, 80));
}

#[test]
fn enter_submits_clears_and_records_history() {
    let mut c = composer();
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::None, "nothing to submit");
    type_text(&mut c, "run the tests  ");
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Submit("run the tests".into()));
    assert!(c.is_empty());
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "run the tests");
}

#[test]
fn newline_keys_do_not_submit() {
    let mut c = composer();
    type_text(&mut c, "a");
    for k in [key_with(KeyCode::Enter, KeyModifiers::SHIFT), key_with(KeyCode::Enter, KeyModifiers::ALT), ctrl('j')] {
        assert_eq!(c.handle_key(k), ComposerAction::Changed);
    }
    type_text(&mut c, "b\\");
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Changed, "a trailing backslash continues");
    type_text(&mut c, "c");
    assert_eq!(c.text(), "a\n\n\nb\nc");
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Submit("a\n\n\nb\nc".into()));
}

#[test]
fn key_releases_are_ignored() {
    let mut c = composer();
    let mut release = key(KeyCode::Char('x'));
    release.kind = KeyEventKind::Release;
    assert_eq!(c.handle_key(release), ComposerAction::None);
    assert!(c.is_empty());
}

#[test]
fn history_walk_keeps_the_draft() {
    let mut c = composer();
    type_text(&mut c, "half-typed\nidea");
    // Up from the second line moves to the first; from the first it recalls history.
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "half-typed\nidea");
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "second prompt");
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "first prompt");
    assert_eq!(c.handle_key(key(KeyCode::Up)), ComposerAction::None, "nothing older");
    c.handle_key(key(KeyCode::Down));
    assert_eq!(c.text(), "second prompt");
    c.handle_key(key(KeyCode::Down));
    assert_eq!(c.text(), "half-typed\nidea");
    assert_eq!(c.handle_key(key(KeyCode::Down)), ComposerAction::None);
}

#[test]
fn a_recalled_command_does_not_capture_up() {
    let mut c = Composer::new(commands(), vec!["/model".into(), "/compact".into()]);
    c.handle_key(key(KeyCode::Up));
    assert_eq!((c.text().as_str(), c.popup()), ("/compact", None));
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "/model");
}

#[test]
fn word_and_line_deletion() {
    let mut c = composer();
    type_text(&mut c, "cargo test --workspace");
    c.handle_key(ctrl('w'));
    assert_eq!(c.text(), "cargo test --");
    c.handle_key(ctrl('w'));
    assert_eq!(c.text(), "cargo test ");
    c.handle_key(key_with(KeyCode::Left, KeyModifiers::CONTROL));
    c.handle_key(ctrl('k'));
    assert_eq!(c.text(), "cargo ");
    c.handle_key(ctrl('u'));
    assert_eq!(c.text(), "");
    type_text(&mut c, "one\ntwo three");
    c.handle_key(ctrl('a'));
    c.handle_key(ctrl('u'));
    assert_eq!(c.text(), "onetwo three", "Ctrl+U at a line start joins the lines");
    c.handle_key(key(KeyCode::End));
    c.handle_key(key_with(KeyCode::Backspace, KeyModifiers::ALT));
    assert_eq!(c.text(), "onetwo ");
    c.handle_key(key(KeyCode::Home));
    c.handle_key(key(KeyCode::Delete));
    assert_eq!(c.text(), "netwo ");
}

#[test]
fn pastes_expand_on_submit_and_delete_as_one() {
    let mut c = composer();
    let big: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    type_text(&mut c, "see ");
    c.handle_paste(&big);
    c.handle_paste("small\r\npaste");
    assert_eq!(c.text(), format!("see {big}small\npaste"));
    c.handle_paste(&big);
    // Backspace removes the second placeholder whole.
    c.handle_key(key(KeyCode::Backspace));
    assert_eq!(c.text(), format!("see {big}small\npaste"));
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Submit(format!("see {big}small\npaste")));
}

#[test]
fn esc_closes_the_popup_before_interrupting() {
    let mut c = composer();
    type_text(&mut c, "/m");
    assert!(c.popup().is_some());
    assert_eq!(c.handle_key(key(KeyCode::Esc)), ComposerAction::Changed);
    assert!(c.popup().is_none());
    assert_eq!(c.handle_key(key(KeyCode::Esc)), ComposerAction::None, "text is left: the app decides");
    c.handle_key(ctrl('u'));
    assert_eq!(c.handle_key(key(KeyCode::Esc)), ComposerAction::Interrupt);
    type_text(&mut c, "/m");
    assert!(c.popup().is_some(), "typing opens it again");
}

#[test]
fn accepting_completions() {
    let mut c = composer();
    type_text(&mut c, "/mo");
    assert_eq!(c.handle_key(key(KeyCode::Tab)), ComposerAction::Changed);
    assert_eq!((c.text().as_str(), c.popup()), ("/model ", None));
    c.clear();
    type_text(&mut c, "/mo");
    c.handle_key(key(KeyCode::Down));
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Submit("/mode".into()));

    type_text(&mut c, "read @mainrs");
    assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::Changed);
    assert_eq!(c.text(), "read @src/main.rs ");
    type_text(&mut c, "and @READ please");
    for _ in 0..7 {
        c.handle_key(key(KeyCode::Left));
    }
    assert_eq!(c.popup().unwrap().items[0].0, "README.md");
    c.handle_key(key(KeyCode::Tab));
    assert_eq!(c.text(), "read @src/main.rs and @README.md please");
}

#[test]
fn up_and_down_follow_wrapped_rows() {
    let mut c = composer();
    type_text(&mut c, "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk");
    // Draw at width 20: 15 text columns, so three rows.
    let mut buf = buffer(20, 6);
    let theme = Theme::default();
    assert_eq!(c.desired_height(20), 6);
    c.render(Rect::new(0, 0, 20, 6), &mut buf, &theme);
    c.handle_key(key(KeyCode::Up));
    c.handle_key(key(KeyCode::Backspace));
    assert_eq!(c.text(), "aaaa bbbb cccc dddd eeee ffff gggg hhh iiii jjjj kkkk");
}

#[test]
fn a_joined_emoji_does_not_shift_the_border() {
    let mut c = composer();
    type_text(&mut c, "family 👨‍👩‍👧 and flag 🇫🇷 ok");
    let width = 40u16;
    let height = c.desired_height(width);
    let mut buf = buffer(width, height);
    let cursor = c.render(Rect::new(0, 0, width, height), &mut buf, &Theme::default());
    // The right border stands in the last column on every row.
    for y in 0..height {
        assert_eq!(
            buf[(width - 1, y)].symbol(),
            if y == 0 {
                "╮"
            } else if y + 1 == height {
                "╯"
            } else {
                "│"
            },
            "row {y}"
        );
    }
    // The cursor sits right after the text: "› " + the text's width.
    let text_width = unicode_width::UnicodeWidthStr::width("family ") + 2 + " and flag ".len() + 2 + " ok".len();
    assert_eq!(cursor, Some((2 + u16::try_from(text_width).unwrap() + 1, 1)));
}
