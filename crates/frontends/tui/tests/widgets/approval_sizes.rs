//! Long approvals at real screen sizes (120×40, 60×20 and every size
//! between): the window over the preview pages by its own height, says
//! which rows show and how many are left, jumps to either end and searches;
//! a diff carries its tint and changed-word marks.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use serde_json::json;
use tern_tui::theme::{ColorDepth, Theme};
use tern_tui::widgets::permission::{PermissionChoice, PermissionPane};

use crate::permission::request;
use crate::support::{buffer, buffer_text, ctrl, key};

/// The pane as the app draws it on a `width`×`height` screen: at the
/// bottom, as tall as it asks, at most all but the status line.
fn screen(pane: &PermissionPane, width: u16, height: u16, theme: &Theme) -> Buffer {
    let rows = pane.desired_height(width).min(height - 1);
    let mut buf = buffer(width, height);
    pane.render(Rect::new(0, height - 1 - rows, width, rows), &mut buf, theme);
    buf
}

fn text(pane: &PermissionPane, width: u16, height: u16) -> String {
    buffer_text(&screen(pane, width, height, &Theme::default()))
}

/// A new file of `n` lines `line 1` … `line n`.
fn long_write(n: usize) -> PermissionPane {
    let content: String = (1..=n).map(|i| format!("line {i}\n")).collect();
    PermissionPane::new(&request("write", json!({"path": "data/big.txt", "content": content})))
}

/// An edit with the diff the runtime computes from the file.
fn edit() -> PermissionPane {
    let old = "    let table = toml::from_str(input).unwrap();";
    let new = "    let table = toml::from_str(input)?;";
    let mut req = request("edit", json!({"path": "src/config.rs", "old_string": old, "new_string": new}));
    req.diff = Some(format!(
        "--- a/src/config.rs\n+++ b/src/config.rs\n@@ -11,3 +11,3 @@\n fn parse(input: &str) -> Result<Config> {{\n-{old}\n+{new}\n     Ok(Config::from(table))\n"
    ));
    PermissionPane::new(&req)
}

/// The line numbers of the file's rows on screen.
fn numbers_shown(screen: &str) -> Vec<usize> {
    screen
        .lines()
        .filter_map(|row| {
            let mut words = row.trim_start_matches('│').split_whitespace();
            let n = words.next()?.parse().ok()?;
            (words.next() == Some("+")).then_some(n)
        })
        .collect()
}

/// `rows A–B of N · K more` from the screen, as (A, B, N, K).
fn position(screen: &str) -> (usize, usize, usize, usize) {
    let row = screen.lines().find(|r| r.contains("rows ") && r.contains(" of ")).unwrap_or_else(|| panic!("{screen}"));
    let after = &row[row.find("rows ").unwrap() + 5..];
    let nums: Vec<usize> =
        after.split(|c: char| !c.is_ascii_digit()).filter(|w| !w.is_empty()).map(|w| w.parse().unwrap()).collect();
    let more = if after.contains(" more") { nums[3] } else { 0 };
    (nums[0], nums[1], nums[2], more)
}

#[test]
fn an_edit_diff_at_120x40_and_60x20() {
    let pane = edit();
    let big = text(&pane, 120, 40);
    let small = text(&pane, 60, 20);
    for screen in [&big, &small] {
        assert!(screen.contains("src/config.rs (+1 −1)"), "{screen}");
        assert!(screen.contains("  12 -     let table = toml::from_str(input).unwrap();"), "{screen}");
        assert!(screen.contains("  12 +     let table = toml::from_str(input)?;"), "{screen}");
        assert!(!screen.contains("more"), "four rows fit whole: {screen}");
    }
    assert_snapshot!(format!("── 120×40 ──\n{big}── 60×20 ──\n{small}"));
}

#[test]
fn a_long_write_at_120x40_and_60x20() {
    let pane = long_write(2000);
    let big = text(&pane, 120, 40);
    assert_eq!(position(&big), (1, 12, 2000, 1988), "folded: the first twelve rows\n{big}");
    assert_eq!(numbers_shown(&big), (1..=12).collect::<Vec<_>>());
    let small = text(&pane, 60, 20);
    let (first, last, total, more) = position(&small);
    assert_eq!((first, total), (1, 2000), "{small}");
    assert_eq!(numbers_shown(&small), (first..=last).collect::<Vec<_>>(), "the rows it names are the rows on screen");
    assert_eq!(more, 2000 - last, "the count is what is hidden:\n{small}");
    assert_snapshot!(format!("── 120×40 ──\n{big}── 60×20 ──\n{small}"));
}

#[test]
fn the_count_is_right_at_every_size() {
    let mut pane = long_write(60);
    for expanded in [false, true] {
        if expanded {
            pane.handle_key(ctrl('o'));
        }
        for width in [40, 60, 80, 120] {
            for height in 14..=45 {
                let screen = text(&pane, width, height);
                if screen.contains("hidden") {
                    assert!(screen.contains("… 60 rows hidden") && numbers_shown(&screen).is_empty(), "{screen}");
                    continue;
                }
                let (first, last, total, more) = position(&screen);
                assert_eq!(total, 60, "{width}×{height}\n{screen}");
                assert_eq!(numbers_shown(&screen), (first..=last).collect::<Vec<_>>(), "{width}×{height}\n{screen}");
                assert_eq!(more, 60 - last, "{width}×{height}\n{screen}");
            }
        }
    }
}

#[test]
fn page_down_shows_every_row_once_at_60x20() {
    let mut pane = long_write(2000);
    let mut seen = Vec::new();
    for _ in 0..2000 {
        let screen = text(&pane, 60, 20);
        let rows = numbers_shown(&screen);
        assert!(!rows.is_empty(), "{screen}");
        let last_seen = seen.last().copied().unwrap_or(0);
        seen.extend(rows.iter().copied().filter(|n| *n > last_seen));
        if rows.last() == Some(&2000) {
            break;
        }
        assert_eq!(pane.handle_key(key(KeyCode::PageDown)), None);
        let next = numbers_shown(&text(&pane, 60, 20));
        let after = rows.last().unwrap() + 1;
        // The last page is a whole page: it ends at the last row.
        let ok = next[0] == after || next.last() == Some(&2000) && next[0] <= after;
        assert!(ok, "the page after {rows:?} starts right after it: {next:?}");
    }
    assert_eq!(seen, (1..=2000).collect::<Vec<_>>(), "no row skipped");
    assert_eq!(pane.handle_key(key(KeyCode::PageUp)), None);
    let back = numbers_shown(&text(&pane, 60, 20));
    assert_eq!(*back.last().unwrap() + back.len(), 2000, "PageUp goes back one page");
}

#[test]
fn home_end_and_search_at_60x20() {
    let mut pane = long_write(2000);
    text(&pane, 60, 20);
    pane.handle_key(key(KeyCode::End));
    let end = text(&pane, 60, 20);
    assert_eq!(numbers_shown(&end).last(), Some(&2000), "{end}");
    assert!(position(&end).3 == 0 && end.contains("PageUp · Home"), "{end}");
    pane.handle_key(key(KeyCode::Home));
    assert_eq!(numbers_shown(&text(&pane, 60, 20))[0], 1);
    // `/` opens the search: what is typed is the query, never an answer.
    assert_eq!(pane.handle_key(key(KeyCode::Char('/'))), None);
    for c in "line 1y3n4".chars() {
        assert_eq!(pane.handle_key(key(KeyCode::Char(c))), None, "{c} is typed into the query");
    }
    for _ in 0..4 {
        pane.handle_key(key(KeyCode::Backspace));
    }
    for c in "234".chars() {
        pane.handle_key(key(KeyCode::Char(c)));
    }
    let typing = text(&pane, 60, 20);
    assert!(typing.contains("/ line 1234"), "{typing}");
    assert_eq!(pane.handle_key(key(KeyCode::Enter)), None, "Enter searches, it does not approve");
    let found = text(&pane, 60, 20);
    assert!(numbers_shown(&found).contains(&1234), "{found}");
    assert!(found.contains("“line 1234” 1/1"), "{found}");
    // Answer keys wait while the search is open; Esc leaves it without answering.
    assert_eq!(pane.handle_key(key(KeyCode::Char('y'))), None);
    assert_eq!(pane.handle_key(key(KeyCode::Char('1'))), None);
    assert_eq!(pane.handle_key(key(KeyCode::Esc)), None, "Esc leaves the search, not the question");
    assert!(numbers_shown(&text(&pane, 60, 20)).contains(&1234), "the window stays where the search took it");
    assert_eq!(pane.handle_key(key(KeyCode::Char('y'))), Some(PermissionChoice::Yes));
}

#[test]
fn diffs_carry_their_tint_and_changed_word_marks() {
    let pane = edit();
    let cells_of = |theme: &Theme, row_text: &str, word: &str| {
        let buf = screen(&pane, 80, 20, theme);
        let text = buffer_text(&buf);
        let y = text.lines().position(|l| l.contains(row_text)).unwrap_or_else(|| panic!("{text}"));
        let line = text.lines().nth(y).unwrap();
        let x = line[..line.find(word).unwrap()].chars().count();
        let row: Vec<_> = (0..80).map(|x| buf[(x as u16, y as u16)].clone()).collect();
        (row[x].bg, row[x + word.chars().count() - 1].bg, row[x - 6].bg, row[77].bg)
    };
    for (theme, line, word) in [
        (Theme::default(), Color::Indexed(52), Color::Indexed(88)),
        (
            Theme::default().with_depth(ColorDepth::TrueColor),
            Color::Rgb(0x4a, 0x22, 0x25),
            Color::Rgb(0x85, 0x2d, 0x33),
        ),
    ] {
        let (first, last, before, edge) = cells_of(&theme, "12 -", ".unwrap()");
        assert_eq!((first, last), (word, word), "the removed words, strongly");
        assert_eq!((before, edge), (line, line), "the rest of the line, to the edge");
    }
    let (first, _, before, _) = cells_of(&Theme::default(), "12 +", "?;");
    assert_eq!((first, before), (Color::Indexed(28), Color::Indexed(22)), "the added word and its line");
    // NO_COLOR: plain text, no background anywhere.
    let buf = screen(&pane, 80, 20, &Theme::plain());
    assert!(buf.content().iter().all(|c| c.bg == Color::Reset && c.fg == Color::Reset));
}
