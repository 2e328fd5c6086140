//! The picker: a list with search, groups and a preview pane, drawn at
//! 120×40 (preview beside the list), 60×20 (below it) and down to 30×10
//! (no preview, nothing panics).

use crossterm::event::KeyCode;
use ratatui::layout::Rect;
use ratatui::text::Line;
use tern_tui::pickers;
use tern_tui::theme::Theme;
use tern_tui::widgets::picker::{Picker, PickerItem};

use crate::support::{buffer, buffer_text, key};

fn session(id: &str, prompt: &str, title: Option<&str>, hours: u64) -> tern_runtime::session_index::SessionSummary {
    tern_runtime::session_index::SessionSummary {
        id: id.into(),
        cwd: "/work/app".into(),
        model: "claude-sonnet-4-5".into(),
        git_branch: Some("main".into()),
        first_prompt: Some(prompt.into()),
        last_prompt: Some("and the docs".into()),
        title: title.map(str::to_string),
        tokens: None,
        cost_usd: None,
        format: 1,
        bytes: 20_480,
        path: format!("/s/{id}.jsonl").into(),
        modified_ms: 100 * 3_600_000 - hours * 3_600_000,
    }
}

/// The resume picker with the first session's preview.
fn resume_picker() -> pickers::OpenPicker {
    let sessions = vec![
        session("20260301-101010-aaaaaa", "fix the failing parser test in crates/parse", None, 1),
        session("20260228-090000-bbbbbb", "add a --json flag to the list command", Some("json output"), 20),
        session("20260220-120000-cccccc", "why is the build slow on CI?", None, 72),
    ];
    let mut open = pickers::resume(sessions.clone(), "/work/app", None, 100 * 3_600_000);
    let last = vec![
        tern_protocol::Message::user_text("fix the failing parser test in crates/parse"),
        tern_protocol::Message::assistant_text(
            "The parser trimmed its input twice; I removed the second trim and the test passes now.",
        ),
    ];
    let item = open.picker.preview_wanted().unwrap();
    open.picker.set_preview(item, pickers::session_preview(&sessions[0], &last, &Theme::plain()));
    open
}

fn draw(picker: &Picker, w: u16, h: u16) -> String {
    let mut buf = buffer(w, h);
    let height = picker.desired_height(w).min(h);
    picker.render(Rect::new(0, h - height, w, height), &mut buf, &Theme::plain());
    buffer_text(&buf)
}

#[test]
fn resume_picker_with_its_preview_beside_the_list_at_120x40() {
    insta::assert_snapshot!(draw(&resume_picker().picker, 120, 40));
}

#[test]
fn resume_picker_with_its_preview_below_the_list_at_60x20() {
    insta::assert_snapshot!(draw(&resume_picker().picker, 60, 20));
}

#[test]
fn typing_narrows_the_list_and_the_count_follows() {
    let mut open = resume_picker();
    for c in "json".chars() {
        open.on_key(key(KeyCode::Char(c)));
    }
    let text = draw(&open.picker, 60, 20);
    assert!(text.contains("json output") && !text.contains("build slow"), "{text}");
    assert!(text.contains("1/3"), "{text}");
}

#[test]
fn grouped_rules_at_60x20() {
    use tern_protocol::{RuleKind, RuleScope};
    let rule = |kind, r: &str, source: &str, scope| tern_runtime::RuleInForce {
        kind,
        rule: r.into(),
        source: source.into(),
        scope,
    };
    let open = pickers::permissions(
        vec![
            rule(RuleKind::Allow, "bash(npm test:*)", "~/.tern/config.toml", Some(RuleScope::User)),
            rule(RuleKind::Deny, "bash(curl:*)", ".tern/config.toml", None),
            rule(RuleKind::Allow, "edit(src/**)", "session", Some(RuleScope::Session)),
        ],
        "default",
        2,
    );
    insta::assert_snapshot!(draw(&open.picker, 60, 20));
}

#[test]
fn pickers_survive_tiny_areas() {
    let mut open = resume_picker();
    let long = Picker::new(
        "A title much longer than the screen is wide",
        (0..100).map(|i| PickerItem::new(format!("item {i} with a long label")).detail("detail").group("g")).collect(),
    )
    .with_preview();
    for (w, h) in [(30, 10), (30, 3), (10, 4), (4, 2), (1, 1), (30, 1), (200, 2)] {
        draw(&open.picker, w, h);
        draw(&long, w, h);
    }
    // At 30 columns the list stays and the preview goes.
    let text = draw(&open.picker, 30, 10);
    assert!(text.contains("fix the fa") && !text.contains("trimmed"), "{text}");
    open.on_key(key(KeyCode::End));
    let mut p = long;
    p.set_preview(0, vec![Line::from("x".repeat(500))]);
    draw(&p, 30, 40);
}

/// A query matches one text of an item at a time: letters taken from two of
/// them (a prompt and a random folder name) are no match.
#[test]
fn a_query_never_matches_across_two_texts() {
    let items = vec![
        PickerItem::new("tell me about pelicans"),
        PickerItem::new("and herons please").search(["/tmp/.tmpic", "20261205-ab"]),
    ];
    let mut picker = Picker::new("Resume", items);
    for c in "pleic".chars() {
        picker.handle_key(key(KeyCode::Char(c)));
    }
    assert_eq!(picker.shown(), 0, "{}", draw(&picker, 60, 10));
    let mut picker = Picker::new("Resume", vec![PickerItem::new("x").search(["/tmp/.tmpic"])]);
    for c in "tmpic".chars() {
        picker.handle_key(key(KeyCode::Char(c)));
    }
    assert_eq!(picker.shown(), 1);
}
