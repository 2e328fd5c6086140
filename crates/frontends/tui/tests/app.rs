//! The whole screen: keys and commands, queued prompts, permission answers,
//! and full frames at 40, 80 and 120 columns.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;
use support::buffer_text;
use tern_policy::engine::{Mode, Policy, PolicySetup};
use tern_policy::rules::RuleContext;
use tern_protocol::{AgentEvent, TodoItem, TodoStatus, ToolResultContent};
use tern_runtime::{PermissionAnswer, PermissionRequest, RuleScope};
use tern_tui::app::{App, Command};
use tern_tui::slash::Slash;
use tern_tui::theme::Theme;

fn app() -> App {
    App::new(
        Theme::plain(),
        "claude-sonnet-4-5".into(),
        tern_runtime::Mode::Default,
        "~/src/demo".into(),
        Some("main".into()),
        200_000,
    )
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_text(app: &mut App, text: &str, now: Instant) {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
}

fn request(tool: &str, input: serde_json::Value) -> PermissionRequest {
    let policy = Policy::new(PolicySetup {
        mode: Mode::Default,
        rules: Vec::new(),
        ctx: RuleContext { workspace: PathBuf::from("/nonexistent-ws"), home: None },
        protected: Vec::new(),
        readable: Vec::new(),
    });
    let decision = policy.decide(tool, &input);
    PermissionRequest { call_id: "c1".into(), tool: tool.into(), input, decision, diff: None }
}

#[test]
fn enter_runs_and_prompts_typed_during_a_turn_are_queued() {
    let t0 = Instant::now();
    let mut a = app();
    type_text(&mut a, "hello", t0);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::Run("hello".into()));
    a.turn_started("hello", t0);
    type_text(&mut a, "next one", t0);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::None);
    assert_eq!(a.queue.len(), 1);
    assert_eq!(a.turn_finished(), Some("next one".into()));
    assert!(!a.busy());
}

#[test]
fn ctrl_c_interrupts_clears_then_quits_on_a_second_press() {
    let t0 = Instant::now();
    let mut a = app();
    a.turn_started("x", t0);
    assert_eq!(a.on_key(ctrl('c'), t0), Command::Interrupt);
    assert_eq!(a.on_key(key(KeyCode::Esc), t0), Command::Interrupt);
    a.turn_finished();
    type_text(&mut a, "draft", t0);
    assert_eq!(a.on_key(ctrl('c'), t0), Command::None);
    assert!(a.composer.is_empty(), "the first Ctrl+C clears the composer");
    assert_eq!(a.on_key(ctrl('c'), t0), Command::None);
    assert!(a.quit_armed.is_some());
    // Too late: the second press arms again instead of quitting.
    assert_eq!(a.on_key(ctrl('c'), t0 + Duration::from_secs(3)), Command::None);
    assert_eq!(a.on_key(ctrl('c'), t0 + Duration::from_secs(4)), Command::Quit);
    assert!(a.quit);
}

#[test]
fn ctrl_d_asks_for_a_second_press_and_the_exit_summary_says_how_to_come_back() {
    let t0 = Instant::now();
    let mut a = app();
    assert_eq!(a.on_key(ctrl('d'), t0), Command::None, "one stray Ctrl+D does not quit");
    assert!(a.quit_armed.is_some() && !a.quit);
    // Another key in between: Ctrl+C then Ctrl+D do not add up to a quit.
    assert_eq!(a.on_key(ctrl('c'), t0), Command::None);
    assert_eq!(a.on_key(ctrl('d'), t0), Command::None);
    assert_eq!(a.on_key(ctrl('d'), t0 + Duration::from_millis(500)), Command::Quit);
    a.turn_started("x", t0);
    a.tokens_in = 12_345;
    a.tokens_out = 678;
    let line = a.exit_summary(Some("20261201-190405-ab12cd"));
    assert_eq!(line, "tern: 1 prompt · ↑12.3k ↓678 tokens\nresume with: tern --resume 20261201-190405-ab12cd");
    assert_eq!(a.exit_summary(None), "tern: 1 prompt · ↑12.3k ↓678 tokens");
}

#[test]
fn slash_commands_shell_and_mode_cycling() {
    let t0 = Instant::now();
    let mut a = app();
    assert_eq!(a.submit("/mode plan".into()), Command::Slash(Slash::Mode, "plan".into()));
    assert_eq!(a.submit("/tools".into()), Command::Slash(Slash::Tools, String::new()));
    assert_eq!(a.submit("!git status".into()), Command::Shell("git status".into()));
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT), t0),
        Command::Slash(Slash::Mode, "next".into())
    );
    let before = a.transcript.len();
    assert_eq!(a.submit("/help".into()), Command::None);
    assert_eq!(a.submit("/nope".into()), Command::None);
    assert_eq!(a.transcript.len(), before + 2, "help and the unknown-command notice are cells");
    assert_eq!(a.submit("/quit".into()), Command::Quit);
}

#[test]
fn the_status_line_waits_for_the_answer_then_goes_back_to_the_tool() {
    let t0 = Instant::now();
    let mut a = app();
    a.turn_started("x", t0);
    a.on_agent_event(
        &tern_protocol::AgentEvent::ToolCallStart { id: "c".into(), name: "bash".into(), input: json!({}) },
        t0,
        |_, _| 0.0,
    );
    assert_eq!(a.activity, "Running bash");
    let (tx, _rx) = tokio::sync::oneshot::channel();
    let asked = t0 + Duration::from_secs(2);
    a.ask_at(request("bash", json!({"command": "touch x"})), tx, asked);
    assert_eq!(a.activity, "Waiting for your answer");
    assert_eq!(a.activity_since, Some(asked), "the clock counts the waiting, not the tool");
    let answered = asked + Duration::from_secs(5);
    assert_eq!(a.on_key(key(KeyCode::Char('1')), answered), Command::None);
    assert_eq!(a.activity, "Running bash");
    assert_eq!(a.activity_since, Some(answered));
}

#[test]
fn permission_answers_reach_the_runtime() {
    let t0 = Instant::now();
    for (keys, expected) in [
        ("2", PermissionAnswer::AllowAlways { rule: "bash(touch:*)".into(), scope: RuleScope::Project }),
        ("4", PermissionAnswer::AllowAlways { rule: "bash(touch:*)".into(), scope: RuleScope::Session }),
        ("5", PermissionAnswer::AllowAlways { rule: "bash(touch:*)".into(), scope: RuleScope::User }),
        ("1", PermissionAnswer::Allow),
        ("y", PermissionAnswer::Allow),
        ("n", PermissionAnswer::Deny { feedback: None }),
        ("3use make instead\r", PermissionAnswer::Deny { feedback: Some("use make instead".into()) }),
    ] {
        let mut a = app();
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        a.ask_at(request("bash", json!({"command": "touch x"})), tx, t0);
        // Keys typed within a moment of the question are not answers.
        assert_eq!(a.on_key(key(KeyCode::Char('1')), t0), Command::None);
        assert!(a.permission.is_some(), "type-ahead must not answer");
        let t0 = t0 + Duration::from_secs(1);
        for c in keys.chars() {
            let k = if c == '\r' { key(KeyCode::Enter) } else { key(KeyCode::Char(c)) };
            assert_eq!(a.on_key(k, t0), Command::None);
        }
        assert_eq!(rx.try_recv().unwrap(), expected, "keys {keys:?}");
        assert!(a.permission.is_none());
    }
    // `n` is No and the turn goes on (the next question shows); Esc and Ctrl+C stop the turn:
    // the front end interrupts first, then every question waiting is refused.
    let mut a = app();
    let later = t0 + Duration::from_secs(1);
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    a.ask_at(request("edit", json!({"path": "src/a.rs", "old_string": "a", "new_string": "b"})), tx, t0);
    // A second question (parallel calls) waits behind the first.
    let (tx2, mut rx2) = tokio::sync::oneshot::channel();
    a.ask_at(request("read", json!({"path": "/etc/hosts"})), tx2, t0);
    a.on_key(key(KeyCode::Char('n')), later);
    assert_eq!(rx.try_recv().unwrap(), PermissionAnswer::Deny { feedback: None });
    assert!(a.permission.is_some(), "the second question shows next");
    assert_eq!(a.on_key(key(KeyCode::Esc), later + Duration::from_secs(1)), Command::StopAtQuestion);
    assert!(rx2.try_recv().is_err(), "not answered before the turn is stopped");
    a.refuse_questions(later + Duration::from_secs(1));
    assert_eq!(rx2.try_recv().unwrap(), PermissionAnswer::Deny { feedback: None });
    assert!(a.permission.is_none());
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    a.ask_at(request("bash", json!({"command": "rm -rf build"})), tx, t0);
    assert_eq!(a.on_key(ctrl('c'), t0), Command::StopAtQuestion, "Ctrl+C works at once");
    a.refuse_questions(t0);
    assert_eq!(rx.try_recv().unwrap(), PermissionAnswer::Deny { feedback: None });
}

fn session(a: &mut App, t0: Instant) {
    a.turn_started("why does test b fail?", t0);
    let events = [
        AgentEvent::TextDelta { text: "I'll run the tests.".into() },
        AgentEvent::ToolCallStart { id: "b1".into(), name: "bash".into(), input: json!({"command": "cargo test"}) },
        AgentEvent::ToolExecutionUpdate { id: "b1".into(), text: "test a ... ok\ntest b ... FAILED\n".into() },
        AgentEvent::ToolExecutionEnd {
            id: "b1".into(),
            name: "bash".into(),
            content: vec![ToolResultContent::text("test a ... ok\ntest b ... FAILED\n[Exit code: 101]")],
            is_error: false,
            details: Some(Box::new(support::details_of("bash", json!({"exit_code": 101})))),
            duration_ms: 1200,
        },
        AgentEvent::TodoUpdate {
            todos: vec![
                TodoItem {
                    content: "Run the tests".into(),
                    status: TodoStatus::Completed,
                    active_form: "Running".into(),
                },
                TodoItem {
                    content: "Fix test b".into(),
                    status: TodoStatus::InProgress,
                    active_form: "Fixing test b".into(),
                },
            ],
        },
        AgentEvent::TextDelta { text: "`b` fails because `parse()` **trims** its input.".into() },
    ];
    for e in &events {
        a.on_agent_event(e, t0, |_, _| 0.0);
    }
}

#[test]
fn whole_frames_at_three_widths_and_with_a_question() {
    let t0 = Instant::now();
    let mut out = String::new();
    for width in [40u16, 80, 120] {
        let mut a = app();
        session(&mut a, t0);
        let area = Rect::new(0, 0, width, 24);
        let mut buf = Buffer::empty(area);
        a.draw(area, &mut buf, t0 + Duration::from_secs(3));
        out.push_str(&format!("── {width} columns ──\n{}", buffer_text(&buf)));
    }
    let mut a = app();
    session(&mut a, t0);
    let (tx, _rx) = tokio::sync::oneshot::channel();
    a.ask(request("bash", json!({"command": "cargo fmt"})), tx);
    let area = Rect::new(0, 0, 80, 24);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0 + Duration::from_secs(3));
    out.push_str(&format!("── 80 columns, asking ──\n{}", buffer_text(&buf)));
    insta::assert_snapshot!(out);
}

#[test]
fn a_retry_says_why_and_counts_down() {
    use tern_protocol::{RetryCause, RetryInfo};
    use tern_tui::app::retry_reason;
    let retry = |cause, status, error: &str| RetryInfo {
        attempt: 2,
        max_attempts: 4,
        delay_ms: 3000,
        error: error.into(),
        cause,
        status,
        discard_partial: false,
    };
    assert_eq!(retry_reason(&retry(RetryCause::Http, Some(429), "slow down")), "Rate limited (429)");
    assert_eq!(retry_reason(&retry(RetryCause::Http, Some(529), "overloaded")), "Overloaded (529)");
    assert_eq!(retry_reason(&retry(RetryCause::Http, Some(502), "bad gateway")), "Server error (502)");
    assert_eq!(
        retry_reason(&retry(
            RetryCause::Connect,
            None,
            "could not reach anthropic at http://x: tcp connect error: Connection refused"
        )),
        "Connection refused"
    );
    assert_eq!(retry_reason(&retry(RetryCause::Overloaded, None, "Overloaded")), "Overloaded");
    // The words come from the cause, not from the text: an HTTP status in a message body is not one.
    assert_eq!(retry_reason(&retry(RetryCause::Stream, None, "the body said HTTP 429")), "Stream broke");
    let t0 = Instant::now();
    let mut a = app();
    a.turn_started("x", t0);
    let info = retry(RetryCause::Http, Some(429), "anthropic returned HTTP 429 for model `m`: slow down");
    a.on_agent_event(&tern_protocol::AgentEvent::Retry(info), t0, |_, _| 0.0);
    let area = Rect::new(0, 0, 100, 12);
    let status_at = |a: &mut App, t: Instant| {
        let mut buf = Buffer::empty(area);
        a.draw(area, &mut buf, t);
        buffer_text(&buf)
    };
    let first = status_at(&mut a, t0);
    assert!(first.contains("Rate limited (429) · retrying in 3 s (2/4)"), "{first}");
    let later = status_at(&mut a, t0 + Duration::from_millis(1500));
    assert!(later.contains("retrying in 2 s"), "{later}");
    // A subagent's text is no news about the parent's request.
    let child = tern_protocol::AgentEvent::Subagent {
        parent_tool_use_id: "t".into(),
        event: Box::new(tern_protocol::AgentEvent::TextDelta { text: "child".into() }),
    };
    a.on_agent_event(&child, t0 + Duration::from_millis(1600), |_, _| 0.0);
    let still = status_at(&mut a, t0 + Duration::from_millis(1600));
    assert!(still.contains("retrying in 2 s"), "{still}");
    a.on_agent_event(
        &tern_protocol::AgentEvent::TextDelta { text: "hi".into() },
        t0 + Duration::from_secs(3),
        |_, _| 0.0,
    );
    let after = status_at(&mut a, t0 + Duration::from_secs(3));
    assert!(!after.contains("retrying"), "{after}");
}

#[test]
fn the_status_line_says_the_model_is_reading_the_prompt_and_counts_from_the_request() {
    let t0 = Instant::now();
    let mut a = app();
    a.turn_started("x", t0);
    let wait = tern_protocol::WaitInfo { input_tokens: 4_213, elapsed_ms: 6_000, limit_secs: 1_800 };
    a.on_agent_event(&tern_protocol::AgentEvent::Waiting(wait), t0 + Duration::from_secs(6), |_, _| 0.0);
    let area = Rect::new(0, 0, 100, 12);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0 + Duration::from_secs(9));
    let text = buffer_text(&buf);
    assert!(text.contains("The model is reading 4.2k tokens") && text.contains("9s"), "{text}");
    // The answer begins: the line says so.
    a.on_agent_event(
        &tern_protocol::AgentEvent::TextDelta { text: "hi".into() },
        t0 + Duration::from_secs(10),
        |_, _| 0.0,
    );
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0 + Duration::from_secs(10));
    assert!(!buffer_text(&buf).contains("reading"), "{}", buffer_text(&buf));
}

#[test]
fn ctrl_r_finds_an_earlier_prompt_and_esc_gives_the_draft_back() {
    let t0 = Instant::now();
    let mut a = app();
    a.composer.load_history(vec!["fix the flaky login test".into(), "update the docs".into()]);
    type_text(&mut a, "draft", t0);
    assert_eq!(a.on_key(ctrl('r'), t0), Command::None);
    assert!(a.composer.searching());
    type_text(&mut a, "login", t0);
    assert_eq!(a.composer.text(), "fix the flaky login test");
    assert!(a.composer.search_title().unwrap().contains("search: login"));
    // Esc: back to the draft.
    assert_eq!(a.on_key(key(KeyCode::Esc), t0), Command::None);
    assert!(!a.composer.searching());
    assert_eq!(a.composer.text(), "draft");
    // Enter takes the match into the composer (not sent yet); Enter again sends it.
    a.on_key(ctrl('r'), t0);
    type_text(&mut a, "docs", t0);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::None);
    assert_eq!(a.composer.text(), "update the docs");
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::Run("update the docs".into()));
    // No match: the title says so and the draft stays.
    a.on_key(ctrl('r'), t0);
    type_text(&mut a, "zzz", t0);
    assert!(a.composer.search_title().unwrap().contains("no match"));
}

#[test]
fn queued_prompts_are_shown_and_can_be_taken_back() {
    let t0 = Instant::now();
    let mut a = app();
    a.turn_started("first", t0);
    type_text(&mut a, "then the docs", t0);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::None);
    assert_eq!(a.queue.len(), 1);
    let area = Rect::new(0, 0, 80, 16);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0);
    let text = buffer_text(&buf);
    assert!(text.contains("queued ▸ then the docs"), "{text}");
    // Up on the empty composer takes it back to edit; Enter queues it again.
    assert_eq!(a.on_key(key(KeyCode::Up), t0), Command::None);
    assert!(a.queue.is_empty());
    assert_eq!(a.composer.text(), "then the docs");
}

#[test]
fn a_finished_todo_list_folds_away_when_the_turn_ends() {
    use tern_protocol::{TodoItem, TodoStatus};
    let t0 = Instant::now();
    let mut a = app();
    let item = |s| TodoItem { content: "write tests".into(), active_form: "Writing tests".into(), status: s };
    a.turn_started("x", t0);
    a.on_agent_event(
        &tern_protocol::AgentEvent::TodoUpdate { todos: vec![item(TodoStatus::Completed)] },
        t0,
        |_, _| 0.0,
    );
    let area = Rect::new(0, 0, 80, 20);
    let draw = |a: &mut App| {
        let mut buf = Buffer::empty(area);
        a.draw(area, &mut buf, t0);
        buffer_text(&buf)
    };
    assert!(draw(&mut a).contains("write tests"), "shown while the turn runs");
    a.turn_finished();
    assert!(!draw(&mut a).contains("write tests"), "folded once it is over");
}

#[test]
fn vim_mode_edits_with_normal_and_insert_keys() {
    let t0 = Instant::now();
    let mut a = app();
    assert_eq!(a.submit("/vim".into()), Command::None);
    type_text(&mut a, "fix the tests", t0);
    // Esc: normal mode (the turn is not interrupted, nothing is sent).
    assert_eq!(a.on_key(key(KeyCode::Esc), t0), Command::None);
    assert_eq!(a.composer.vim_mode(), Some(tern_tui::widgets::composer::VimMode::Normal));
    // 0 to the start, w to "the", D deletes to the end of the line, A types at its end.
    for c in ['0', 'w'] {
        a.on_key(key(KeyCode::Char(c)), t0);
    }
    a.on_key(key(KeyCode::Char('D')), t0);
    assert_eq!(a.composer.text(), "fix ");
    a.on_key(key(KeyCode::Char('A')), t0);
    type_text(&mut a, "the build", t0);
    assert_eq!(a.composer.text(), "fix the build");
    a.on_key(key(KeyCode::Esc), t0);
    a.on_key(key(KeyCode::Char('o')), t0);
    type_text(&mut a, "and lint", t0);
    a.on_key(key(KeyCode::Esc), t0);
    a.on_key(key(KeyCode::Char('d')), t0);
    a.on_key(key(KeyCode::Char('d')), t0);
    assert_eq!(a.composer.text(), "fix the build");
    // Enter in normal mode sends.
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::Run("fix the build".into()));
    assert_eq!(a.submit("/vim".into()), Command::None);
    assert_eq!(a.composer.vim_mode(), None);
}

#[test]
fn a_pasted_block_stays_a_placeholder_in_the_transcript_and_is_sent_whole() {
    let t0 = Instant::now();
    let mut a = app();
    type_text(&mut a, "why? ", t0);
    let pasted: String = (1..=200).map(|i| format!("log line {i}\n")).collect();
    a.on_paste(&pasted);
    let Command::Run(sent) = a.on_key(key(KeyCode::Enter), t0) else { panic!("not run") };
    assert!(sent.contains("log line 200"), "the model gets the whole paste");
    a.turn_started(&sent, t0);
    let area = Rect::new(0, 0, 80, 12);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0);
    let screen = buffer_text(&buf);
    assert!(screen.contains("› why? [Pasted 200 lines]") && !screen.contains("log line 1"), "{screen}");
    // Ctrl+O expands it.
    a.on_key(ctrl('o'), t0);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0);
    let screen = buffer_text(&buf);
    assert!(screen.contains("log line 19") && !screen.contains("[Pasted"), "{screen}");
}

#[test]
fn custom_commands_and_skills_are_offered_listed_and_sent_as_typed() {
    let t0 = Instant::now();
    let mut a = app();
    a.set_custom_commands(vec![
        ("fix".to_string(), "Fix an issue".to_string()),
        ("help".to_string(), "shadowed by the built-in".to_string()),
    ]);
    type_text(&mut a, "/fi", t0);
    let area = Rect::new(0, 0, 80, 16);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0);
    assert!(buffer_text(&buf).contains("Fix an issue"), "offered in the popup:\n{}", buffer_text(&buf));
    a.composer.clear();
    type_text(&mut a, "/fix 42 now", t0);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::Run("/fix 42 now".into()));
    // The runtime expands it; the transcript shows what was typed.
    a.show_prompt_as("Fix issue #42", "/fix 42 now");
    a.turn_started("Fix issue #42", t0);
    type_text(&mut a, "/fix 7", t0);
    assert_eq!(a.on_key(key(KeyCode::Enter), t0), Command::None, "queued during a turn");
    assert_eq!(a.queue.front().map(String::as_str), Some("/fix 7"));
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, t0);
    assert!(buffer_text(&buf).contains("› /fix 42 now"), "{}", buffer_text(&buf));
    a.turn_finished();
    a.turn_finished();
    type_text(&mut a, "/help", t0);
    a.on_key(key(KeyCode::Enter), t0);
    let mut buf = Buffer::empty(Rect::new(0, 0, 80, 200));
    a.draw(Rect::new(0, 0, 80, 200), &mut buf, t0);
    let help = buffer_text(&buf);
    assert!(help.contains("Custom commands and skills") && help.contains("/fix"), "{help}");
    assert!(!help.contains("shadowed by the built-in"), "a built-in name stays the built-in's");
}

#[test]
fn a_subagent_is_priced_at_its_own_model() {
    let mut a = app();
    let t0 = Instant::now();
    let usage = tern_protocol::Usage { input_tokens: 10, output_tokens: 5, ..Default::default() };
    let message = |model: &str| tern_protocol::AgentEvent::AssistantMessage {
        message: tern_protocol::Message::assistant_text("x"),
        stop_reason: None,
        usage,
        model: model.into(),
    };
    let price = |_: &tern_protocol::Usage, model: &str| if model == "pricey" { 1.0 } else { 0.01 };
    a.on_agent_event(
        &tern_protocol::AgentEvent::Subagent { parent_tool_use_id: "t".into(), event: Box::new(message("pricey")) },
        t0,
        price,
    );
    a.on_agent_event(&message("whatever-the-provider-says"), t0, price);
    assert!((a.cost_usd - 1.01).abs() < 1e-9, "{}", a.cost_usd);
}

#[test]
fn a_question_mark_on_an_empty_composer_shows_the_help() {
    let t0 = Instant::now();
    let mut a = app();
    let help = a.on_key(key(KeyCode::Char('?')), t0);
    assert!(matches!(help, Command::Slash(s, _) if s.name() == "help"), "{help:?}");
    // In text it is a question mark.
    a.on_key(key(KeyCode::Char('x')), t0);
    assert_eq!(a.on_key(key(KeyCode::Char('?')), t0), Command::None);
    assert_eq!(a.composer.text(), "x?");
}

fn task(id: &str, status: tern_protocol::TaskStatus) -> AgentEvent {
    AgentEvent::BackgroundTask {
        task: tern_protocol::TaskSummary {
            id: id.into(),
            command: "npm run dev".into(),
            status,
            elapsed_ms: 0,
            output_bytes: 0,
            log: PathBuf::from("/tmp/bg.log"),
            subagent: None,
        },
    }
}

fn status_row(a: &mut App, now: Instant) -> String {
    let area = Rect::new(0, 0, 100, 12);
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf, now);
    buffer_text(&buf).trim_end().lines().last().unwrap_or_default().to_string()
}

#[test]
fn ctrl_b_asks_the_session_to_move_the_running_command_and_the_status_line_counts_tasks() {
    use tern_protocol::TaskStatus;
    let t0 = Instant::now();
    let mut a = app();
    a.turn_started("run the server", t0);
    a.on_agent_event(
        &AgentEvent::ToolCallStart { id: "b1".into(), name: "bash".into(), input: json!({"command": "npm run dev"}) },
        t0,
        |_, _| 0.0,
    );
    assert_eq!(a.on_key(ctrl('b'), t0), Command::ToBackground);
    assert!(!status_row(&mut a, t0).contains(" bg"), "no task yet");
    for e in [task("bg-1", TaskStatus::Running), task("bg-2", TaskStatus::Running)] {
        a.on_agent_event(&e, t0, |_, _| 0.0);
    }
    assert!(status_row(&mut a, t0).contains("· 2 bg"), "{}", status_row(&mut a, t0));
    a.on_agent_event(&task("bg-1", TaskStatus::Exited { exit_code: Some(0) }), t0, |_, _| 0.0);
    a.turn_finished();
    let idle = status_row(&mut a, t0);
    assert!(idle.trim_start().starts_with("? /help · 1 bg"), "{idle}");
    a.on_agent_event(&task("bg-2", TaskStatus::Stopped), t0, |_, _| 0.0);
    assert!(!status_row(&mut a, t0).contains(" bg"), "none runs now");
    // At a question, Ctrl+B is not a way around the answer.
    let (tx, _rx) = tokio::sync::oneshot::channel();
    a.ask(request("bash", json!({"command": "cargo fmt"})), tx);
    assert_eq!(a.on_key(ctrl('b'), t0 + Duration::from_secs(1)), Command::None);
}

#[test]
fn an_attached_image_shows_as_a_placeholder_and_goes_with_the_prompt_that_holds_it() {
    let t0 = Instant::now();
    let mut a = app();
    let image = |data: &str| tern_runtime::images::PromptImage {
        source: tern_protocol::ImageSource { media_type: "image/png".into(), data: data.into() },
        bytes: 123_000,
    };
    type_text(&mut a, "what is ", t0);
    a.attach_image("shot.png", image("AAA"));
    a.attach_image("dropped.png", image("BBB"));
    let Command::Run(prompt) = a.on_key(key(KeyCode::Enter), t0) else { panic!("a prompt") };
    assert_eq!(prompt, "what is [image 1: shot.png 120.1 KB][image 2: dropped.png 120.1 KB]");
    // The person took the second one out of the text before sending: only the first goes.
    let sent = a.take_images("what is [image 1: shot.png 120.1 KB]");
    assert!(matches!(sent.as_slice(), [tern_protocol::ContentBlock::Image { source }] if source.data == "AAA"));
    assert!(a.take_images("what is [image 1: shot.png 120.1 KB]").is_empty(), "taken once");
}
