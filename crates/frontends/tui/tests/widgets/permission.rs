//! The permission prompt: snapshots for each kind of call, and its keys.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::layout::Rect;
use serde_json::{Value, json};
use tern_policy::engine::{Policy, PolicySetup};
use tern_policy::rules::RuleContext;
use tern_runtime::{Mode, PermissionRequest, RuleScope, Verdict};
use tern_tui::theme::Theme;
use tern_tui::widgets::permission::{PermissionChoice, PermissionPane};

use crate::support::{at_widths, buffer, buffer_text, ctrl, key};

/// The request the real policy (default mode, no rules) makes for this call.
pub(crate) fn request(tool: &str, input: Value) -> PermissionRequest {
    let policy = Policy::new(PolicySetup {
        mode: Mode::Default,
        rules: Vec::new(),
        ctx: RuleContext { workspace: "/home/dev/proj".into(), home: Some("/home/dev".into()) },
        protected: Vec::new(),
        readable: Vec::new(),
    });
    let decision = policy.decide(tool, &input);
    assert_eq!(decision.verdict, Verdict::Ask, "{tool} {input} is asked: {}", decision.reason);
    PermissionRequest { call_id: "call_1".into(), tool: tool.into(), input, decision, diff: None }
}

fn draw(pane: &PermissionPane, width: u16) -> String {
    let height = pane.desired_height(width);
    let mut buf = buffer(width, height);
    pane.render(Rect::new(0, 0, width, height), &mut buf, &Theme::default());
    buffer_text(&buf)
}

fn snapshot(pane: &PermissionPane) -> String {
    at_widths(|w| draw(pane, w))
}

fn bash(command: &str) -> PermissionPane {
    PermissionPane::new(&request("bash", json!({ "command": command })))
}

#[test]
fn bash_command_with_a_suggestion() {
    let req = request(
        "bash",
        json!({"command": "npm run test -- --reporter=verbose --testNamePattern='parses nested config files'"}),
    );
    assert!(req.decision.suggestion.is_some());
    assert_snapshot!(snapshot(&PermissionPane::new(&req)));
}

#[test]
fn dangerous_bash_command() {
    assert_snapshot!(snapshot(&bash("rm -rf build/ && \\\n  git push --force origin main")));
}

#[test]
fn edit_with_a_diff_preview() {
    let old = "fn parse(input: &str) -> Config {\n    let table = toml::from_str(input).unwrap();\n    Config::from(table)\n}";
    let new = "fn parse(input: &str) -> Result<Config, ConfigError> {\n    let table = toml::from_str(input)\n        .map_err(|e| ConfigError::Syntax(e.to_string()))?;\n    Ok(Config::from(table))\n}";
    let req = request("edit", json!({"path": "src/config.rs", "old_string": old, "new_string": new}));
    assert_snapshot!(snapshot(&PermissionPane::new(&req)));
}

#[test]
fn long_edit_is_capped() {
    let old: String = (1..=10).map(|i| format!("old line {i}\n")).collect();
    let new: String = (1..=10).map(|i| format!("new line {i}\n")).collect();
    let req = request("edit", json!({"path": "notes.txt", "old_string": old, "new_string": new}));
    assert_snapshot!(draw(&PermissionPane::new(&req), 80));
}

#[test]
fn write_shows_the_first_lines() {
    let content: String = (1..=20).map(|i| format!("key_{i} = {i}\n")).collect();
    let req = request("write", json!({"path": "config/generated.toml", "content": content}));
    assert_snapshot!(snapshot(&PermissionPane::new(&req)));
}

#[test]
fn overwriting_a_file_shows_what_is_removed() {
    let mut req = request("write", json!({"path": "notes.txt", "content": "one\nTWO\nthree\n"}));
    req.diff = Some("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n".into());
    let text = draw(&PermissionPane::new(&req), 80);
    assert!(text.contains("overwrites the existing file: +1 −1"), "{text}");
    assert!(text.contains("- two") && text.contains("+ TWO") && text.contains("  one"), "{text}");
}

#[test]
fn mcp_tool_without_a_suggestion() {
    let mut req = request(
        "mcp__github__create_issue",
        json!({"owner": "tern-dev", "repo": "tern", "title": "Composer drops Shift+Enter in tmux", "labels": ["tui", "bug"]}),
    );
    req.decision.suggestion = None;
    let pane = PermissionPane::new(&req);
    assert_snapshot!(snapshot(&pane));
}

#[test]
fn feedback_field_open() {
    let mut pane = bash("cargo test --workspace");
    assert_eq!(pane.handle_key(key(KeyCode::Char('3'))), None);
    for c in "use cargo nextest instead".chars() {
        assert_eq!(pane.handle_key(key(KeyCode::Char(c))), None);
    }
    assert_snapshot!(snapshot(&pane));
}

#[test]
fn too_short_an_area_cuts_the_preview_first() {
    let pane = bash(&(1..=30).map(|i| format!("touch out/{i}.txt")).collect::<Vec<_>>().join("\n"));
    let mut buf = buffer(60, 12);
    pane.render(Rect::new(0, 0, 60, 12), &mut buf, &Theme::default());
    assert_snapshot!(buffer_text(&buf));
}

#[test]
fn number_keys_pick_directly() {
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('1'))), Some(PermissionChoice::Yes));
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('2'))), Some(PermissionChoice::YesAlways(RuleScope::Project)));
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('4'))), Some(PermissionChoice::YesAlways(RuleScope::Session)));
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('5'))), Some(PermissionChoice::YesAlways(RuleScope::User)));
    let mut pane = bash("make");
    assert_eq!(pane.handle_key(key(KeyCode::Char('3'))), None, "3 is No, as in other agents: it opens the field");
    assert_eq!(pane.handle_key(key(KeyCode::Enter)), Some(PermissionChoice::No { feedback: None }));
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('6'))), None);
}

#[test]
fn without_a_suggestion_the_answers_renumber() {
    let mut req = request("bash", json!({"command": "make"}));
    req.decision.suggestion = None;
    let mut pane = PermissionPane::new(&req);
    assert!(!draw(&pane, 80).contains("don't ask again"));
    assert_eq!(pane.handle_key(key(KeyCode::Char('3'))), None);
    assert_eq!(pane.handle_key(key(KeyCode::Char('2'))), None, "2 is now the No answer");
    assert!(draw(&pane, 80).contains("what should tern do instead?"));
}

#[test]
fn letters_and_esc() {
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('y'))), Some(PermissionChoice::Yes));
    assert_eq!(bash("make").handle_key(key(KeyCode::Char('n'))), Some(PermissionChoice::No { feedback: None }));
    assert_eq!(bash("make").handle_key(key(KeyCode::Esc)), Some(PermissionChoice::Stop));
}

#[test]
fn arrows_and_enter() {
    let mut pane = bash("make");
    assert_eq!(pane.handle_key(key(KeyCode::Down)), None);
    assert_eq!(pane.handle_key(key(KeyCode::Enter)), Some(PermissionChoice::YesAlways(RuleScope::Project)));
    let mut pane = bash("make");
    pane.handle_key(key(KeyCode::Up));
    assert_eq!(pane.handle_key(key(KeyCode::Enter)), Some(PermissionChoice::YesAlways(RuleScope::User)), "Up wraps");
    let mut pane = bash("make");
    pane.handle_key(key(KeyCode::Down));
    pane.handle_key(key(KeyCode::Down));
    assert_eq!(pane.handle_key(key(KeyCode::Enter)), None, "the third answer is No, which opens the field");
    let mut pane = bash("make");
    for _ in 0..5 {
        pane.handle_key(key(KeyCode::Up));
    }
    assert_eq!(pane.handle_key(key(KeyCode::Enter)), Some(PermissionChoice::Yes), "five answers, round");
}

#[test]
fn feedback_typing() {
    let mut pane = bash("make");
    pane.handle_key(key(KeyCode::Char('3')));
    for c in "yes no".chars() {
        assert_eq!(pane.handle_key(key(KeyCode::Char(c))), None, "letters type into the field");
    }
    pane.handle_key(key(KeyCode::Backspace));
    pane.handle_key(ctrl('w'));
    pane.handle_key(key(KeyCode::Home));
    pane.handle_key(key(KeyCode::Delete));
    pane.handle_paste("try\nthis ");
    assert_eq!(
        pane.handle_key(key(KeyCode::Enter)),
        Some(PermissionChoice::No { feedback: Some("try this es".into()) })
    );

    let mut pane = bash("make");
    pane.handle_key(key(KeyCode::Char('3')));
    pane.handle_key(key(KeyCode::Char('x')));
    assert_eq!(pane.handle_key(key(KeyCode::Esc)), None, "Esc goes back to the answers");
    assert_eq!(pane.handle_key(key(KeyCode::Char('1'))), Some(PermissionChoice::Yes));
}

#[test]
fn a_very_short_pane_keeps_the_command_and_every_answer() {
    let pane = bash("touch fixed.txt");
    let mut buf = buffer(50, 9);
    pane.render(Rect::new(0, 0, 50, 9), &mut buf, &Theme::default());
    let text = buffer_text(&buf);
    assert!(text.contains("$ touch fixed.txt"), "{text}");
    assert!(
        text.contains("1. Yes") && text.contains("3. No") && text.contains("5. Yes, don't ask again in any project"),
        "{text}"
    );
}

#[test]
fn everything_being_approved_can_be_seen() {
    let content: String = (1..=60).map(|i| format!("line {i}\n")).collect();
    let mut pane = PermissionPane::new(&request("write", json!({"path": "notes.txt", "content": content})));
    let folded = draw(&pane, 60);
    assert!(folded.contains("line 12") && !folded.contains("line 13"), "{folded}");
    assert!(folded.contains("rows 1–12 of 60 · 48 more"), "{folded}");
    assert!(folded.contains("Ctrl+O all"), "{folded}");
    assert_eq!(pane.handle_key(ctrl('o')), None);
    // Expanded, in a screen-sized area: more shows, and PageDown scrolls to the end.
    let area = Rect::new(0, 0, 60, 30);
    let frame = |pane: &PermissionPane| {
        let mut buf = buffer(60, 30);
        pane.render(area, &mut buf, &Theme::default());
        buffer_text(&buf)
    };
    let first = frame(&pane);
    assert!(first.contains("line 14") && first.contains("PageDown"), "{first}");
    for _ in 0..6 {
        assert_eq!(pane.handle_key(key(KeyCode::PageDown)), None);
        frame(&pane);
    }
    let last = frame(&pane);
    assert!(last.contains("line 60"), "{last}");
    // Answering still works while expanded.
    assert!(matches!(pane.handle_key(key(KeyCode::Enter)), Some(PermissionChoice::Yes)));
}

#[test]
fn a_plan_that_wraps_past_the_fold_offers_ctrl_o() {
    // Five source lines, each wrapping to many rows at this width.
    let plan = (1..=5).map(|i| format!("{i}. {}", "word ".repeat(60))).collect::<Vec<_>>().join("\n");
    let mut req = request("bash", json!({"command": "make"}));
    req.tool = "exit_plan_mode".into();
    req.input = json!({ "plan": plan });
    let pane = PermissionPane::new(&req);
    let text = draw(&pane, 50);
    assert!(text.contains("rows 1–30 of 40 · 10 more"), "{text}");
    assert!(text.contains("Ctrl+O all"), "the title says so too: {text}");
}
