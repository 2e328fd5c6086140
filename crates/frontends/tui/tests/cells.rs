#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every kind of cell, drawn at 40, 80 and 120 columns without colour.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{at_widths, end_tool, later, numbered, start_tool};
use tern_protocol::{AgentEvent, Message};
use tern_tui::theme::Theme;
use tern_tui::transcript::{CellKind, NoticeLevel, OutputTail, ShellCell, Transcript};

const PLAIN: Theme =
    Theme { color: false, palette: tern_tui::theme::Palette::Dark, depth: tern_tui::theme::ColorDepth::Indexed };

fn snapshot(name: &str, t: &mut Transcript, now: Instant) {
    insta::assert_snapshot!(name, at_widths(t, &PLAIN, now));
}

pub const MARKDOWN: &str = r#"# Fixing the parser

The panic comes from **`parse_header`**, which *assumes* the input is non-empty and ~~never~~ rarely checks. See [the docs](https://docs.rs/nom) or <https://example.com>.

## Plan

1. Guard the empty case
2. Add tests:
   - empty input
   - a header longer than the terminal is wide, which must wrap with a hanging indent
3. Run `cargo test`

- [x] reproduce
- [ ] fix

> Note: the old behaviour was documented as
> "undefined".

```rust
fn parse_header(input: &str) -> Option<Header> {
    let first = input.lines().next()?; // was: unwrap() — panicked on an empty input string
    Header::from_line(first)
}
```

| Case | Before | After |
|------|:------:|------:|
| empty | panic | `None` |
| one line header with trailing spaces | ok | ok |

---
Done."#;

#[test]
fn user() {
    let mut t = Transcript::new();
    t.push(CellKind::user(
        "Fix the failing test in parser.rs — it panics on empty input. Also add a regression test \
               for the unicode case: 日本語のテキスト.\n\nThanks!",
    ));
    snapshot("user", &mut t, Instant::now());
}

#[test]
fn assistant_markdown() {
    let mut t = Transcript::new();
    t.push(CellKind::Assistant { markdown: MARKDOWN.into(), streaming: false });
    snapshot("assistant_markdown", &mut t, Instant::now());
}

fn thinking() -> Transcript {
    let mut t = Transcript::new();
    t.apply(&AgentEvent::ThinkingDelta {
        text: "The user wants the parser fixed. Let me look at parse_header first.\n\nIt calls unwrap on the first \
               line; an empty string has no lines.\nSo the fix is a guard."
            .into(),
    });
    t.apply(&AgentEvent::TextDelta { text: "Let me look.".into() });
    t
}

#[test]
fn thinking_collapsed() {
    snapshot("thinking_collapsed", &mut thinking(), Instant::now());
}

#[test]
fn thinking_expanded() {
    let mut t = thinking();
    t.set_show_thinking(true);
    snapshot("thinking_expanded", &mut t, Instant::now());
}

#[test]
fn bash_running() {
    let mut t = Transcript::new();
    let i = start_tool(
        &mut t,
        "c1",
        "bash",
        json!({"command": "cargo test -p tern-tui --all-targets -- --nocapture --test-threads=1"}),
    );
    t.apply(&AgentEvent::ToolExecutionUpdate { id: "c1".into(), text: "   Compiling tern-tui v0.1.0\n".into() });
    t.apply(&AgentEvent::ToolExecutionUpdate { id: "c1".into(), text: numbered("test transcript::case", 0, 11) });
    t.apply(&AgentEvent::ToolExecutionUpdate {
        id: "c1".into(),
        text: "running 3 tests, a progress line that is much longer than forty columns".into(),
    });
    let now = later(&t, i, 3250);
    snapshot("bash_running", &mut t, now);
}

fn bash_finished(exit: i32, lines: &str, total: u64) -> Transcript {
    let mut t = Transcript::new();
    start_tool(&mut t, "c1", "bash", json!({"command": "cargo build --release\n# and then\ncargo test"}));
    t.apply(&AgentEvent::ToolExecutionUpdate { id: "c1".into(), text: lines.into() });
    let details = json!({"exit_code": exit, "duration_ms": 1234, "total_lines": total, "total_bytes": 9000,
                         "truncated": false, "full_output": null, "timed_out": false, "interrupted": false});
    end_tool(&mut t, "c1", "bash", &format!("{lines}\n[Exit code: {exit}]"), exit != 0, Some(details), 1234);
    t
}

#[test]
fn bash_ok() {
    let mut t = bash_finished(0, &numbered("line", 0, 348), 348);
    snapshot("bash_ok", &mut t, Instant::now());
}

#[test]
fn bash_failed() {
    let out = "   Compiling tern v0.1.0\nerror[E0425]: cannot find value `x` in this scope\n --> src/main.rs:3:13\n  |\n3 |     let y = x + 1;\n  |             ^ not found in this scope\n\nerror: could not compile `tern` (bin \"tern\") due to 1 previous error\n";
    let mut t = bash_finished(101, out, 8);
    snapshot("bash_failed", &mut t, Instant::now());
}

#[test]
fn bash_expanded() {
    let mut t = Transcript::new();
    let i = start_tool(&mut t, "c1", "bash", json!({"command": "seq 1 20"}));
    if let Some(CellKind::Tool(cell)) = t.cell_mut(i) {
        cell.tail = OutputTail::new(8);
    }
    t.apply(&AgentEvent::ToolExecutionUpdate { id: "c1".into(), text: numbered("n", 1, 21) });
    let details = json!({"exit_code": 0, "total_lines": 20, "full_output": "/tmp/tern/bash-c1.log"});
    end_tool(&mut t, "c1", "bash", "…", false, Some(details), 20);
    assert!(t.select_last_tool());
    t.toggle_selected();
    snapshot("bash_expanded", &mut t, Instant::now());
}

#[test]
fn bash_without_streamed_output() {
    let mut t = Transcript::new();
    start_tool(&mut t, "c1", "bash", json!({"command": "ls"}));
    end_tool(
        &mut t,
        "c1",
        "bash",
        "Cargo.toml\nsrc\n[Exit code: 0]",
        false,
        Some(json!({"exit_code": 0, "total_lines": 2})),
        5,
    );
    snapshot("bash_without_streamed_output", &mut t, Instant::now());
}

fn edit_details() -> serde_json::Value {
    let line = |tag: &str, old: Option<u64>, new: Option<u64>, text: &str| json!({"tag": tag, "old": old, "new": new, "text": text});
    let mut first = vec![
        line(" ", Some(40), Some(40), "fn parse_header(input: &str) -> Option<Header> {"),
        line("-", Some(41), None, "    let first = input.lines().next().unwrap();"),
        line(
            "+",
            None,
            Some(41),
            "    let first = input.lines().next()?; // an empty input has no header line, so say so",
        ),
        line(" ", Some(42), Some(42), "    Header::from_line(first)"),
        line(" ", Some(43), Some(43), "}"),
    ];
    let second: Vec<_> =
        (0..20).map(|k| line("+", None, Some(120 + k), &format!("    assert!(case_{k}());"))).collect();
    first.truncate(5);
    json!({"path": "src/parser.rs", "replacements": 2, "fallback": false, "added": 21, "removed": 1,
           "diff": "(unused when hunks are present)",
           "hunks": [{"old_start": 40, "new_start": 40, "lines": first}, {"old_start": 118, "new_start": 120, "lines": second}]})
}

#[test]
fn edit_diff() {
    let mut t = Transcript::new();
    start_tool(&mut t, "e1", "edit", json!({"path": "src/parser.rs", "old_string": "a", "new_string": "b"}));
    end_tool(&mut t, "e1", "edit", "Edited src/parser.rs", false, Some(edit_details()), 12);
    snapshot("edit_diff", &mut t, Instant::now());
}

#[test]
fn edit_expanded() {
    let mut t = Transcript::new();
    start_tool(&mut t, "e1", "edit", json!({"path": "src/parser.rs"}));
    end_tool(&mut t, "e1", "edit", "Edited src/parser.rs", false, Some(edit_details()), 12);
    t.select_last_tool();
    t.toggle_selected();
    insta::assert_snapshot!("edit_expanded", support::render(&mut t, 80, &PLAIN, Instant::now()));
}

#[test]
fn write_created_and_overwritten() {
    let mut t = Transcript::new();
    let content = "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[dependencies]\n";
    start_tool(&mut t, "w1", "write", json!({"path": "demo/Cargo.toml", "content": content}));
    end_tool(
        &mut t,
        "w1",
        "write",
        "Created demo/Cargo.toml (5 lines, 60 B).",
        false,
        Some(json!({"path": "demo/Cargo.toml", "created": true, "lines": 5, "bytes": 60})),
        3,
    );
    let diff = "--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n # Demo\n-Old text.\n+New text that is a good deal longer than the old one was, to show wrapping.\n \n";
    start_tool(&mut t, "w2", "write", json!({"path": "README.md", "content": "…"}));
    end_tool(
        &mut t,
        "w2",
        "write",
        "Overwrote README.md",
        false,
        Some(
            json!({"path": "README.md", "created": false, "lines": 3, "bytes": 90, "diff": diff, "added": 1, "removed": 1}),
        ),
        4,
    );
    snapshot("write", &mut t, Instant::now());
}

fn explore() -> Transcript {
    let mut t = Transcript::new();
    start_tool(&mut t, "r1", "read", json!({"path": "crates/tui/src/transcript/mod.rs"}));
    end_tool(
        &mut t,
        "r1",
        "read",
        "     1\t//! The transcript\n     2\t\n     3\tmod apply;",
        false,
        Some(
            json!({"path": "crates/tui/src/transcript/mod.rs", "start_line": 1, "end_line": 120, "total_lines": 120, "truncated": false}),
        ),
        3,
    );
    start_tool(&mut t, "r2", "read", json!({"path": "src/big.rs", "offset": 100, "limit": 50}));
    end_tool(
        &mut t,
        "r2",
        "read",
        "…",
        false,
        Some(json!({"path": "src/big.rs", "start_line": 100, "end_line": 149, "total_lines": 1204, "truncated": true})),
        2,
    );
    start_tool(
        &mut t,
        "g1",
        "grep",
        json!({"pattern": "fn render", "path": "crates", "glob": "*.rs", "output_mode": "content"}),
    );
    end_tool(
        &mut t,
        "g1",
        "grep",
        "crates/tui/src/a.rs:10:fn render",
        false,
        Some(json!({"path": "crates", "total": 12, "files": 4, "shown": 12, "offset": 0})),
        8,
    );
    start_tool(&mut t, "g2", "grep", json!({"pattern": "TODO"}));
    end_tool(
        &mut t,
        "g2",
        "grep",
        "No matches",
        false,
        Some(json!({"path": ".", "total": 0, "files": 0, "shown": 0})),
        8,
    );
    start_tool(&mut t, "g3", "glob", json!({"pattern": "**/*.rs", "path": "crates/tui"}));
    end_tool(
        &mut t,
        "g3",
        "glob",
        "a.rs\nb.rs",
        false,
        Some(json!({"path": "crates/tui", "total": 38, "shown": 38})),
        5,
    );
    start_tool(&mut t, "l1", "ls", json!({"path": "crates"}));
    end_tool(
        &mut t,
        "l1",
        "ls",
        "agent-loop/\ncli/\ntui/",
        false,
        Some(json!({"path": "crates", "total": 3, "shown": 3})),
        1,
    );
    t
}

#[test]
fn explore_summaries() {
    snapshot("explore_summaries", &mut explore(), Instant::now());
}

#[test]
fn read_expanded() {
    let mut t = explore();
    t.select_last_tool();
    for _ in 0..5 {
        t.select_prev_tool();
    }
    assert_eq!(t.selected(), Some(0));
    t.toggle_selected();
    insta::assert_snapshot!("read_expanded", support::render(&mut t, 80, &PLAIN, Instant::now()));
}

#[test]
fn tool_error() {
    let mut t = Transcript::new();
    start_tool(&mut t, "e1", "edit", json!({"path": "src/parser.rs", "old_string": "x", "new_string": "y"}));
    let msg = "The text to replace was not found in src/parser.rs. The most similar lines are:\n  40 | fn parse_header(input: &str) {\n  41 |     let first = input.lines().next().unwrap();\n  42 |     Header::from_line(first)\n  43 | }\n  44 |\n  45 | fn other() {}\nRead the file again and copy the exact text.";
    end_tool(&mut t, "e1", "edit", msg, true, None, 2);
    snapshot("tool_error", &mut t, Instant::now());
}

#[test]
fn other_tools() {
    let mut t = Transcript::new();
    start_tool(
        &mut t,
        "m1",
        "mcp__github__create_issue",
        json!({"repo": "tern/tern", "title": "Parser panics on empty input", "labels": ["bug", "parser"], "draft": false}),
    );
    end_tool(
        &mut t,
        "m1",
        "mcp__github__create_issue",
        "Created issue #42\nhttps://github.com/tern/tern/issues/42\nlabels: bug, parser\nassignee: none",
        false,
        None,
        640,
    );
    start_tool(
        &mut t,
        "t1",
        "todo_write",
        json!({"todos": [{"content": "a", "status": "pending"}, {"content": "b", "status": "in_progress"}, {"content": "c", "status": "completed"}]}),
    );
    end_tool(&mut t, "t1", "todo_write", "ok", false, None, 0);
    let i = start_tool(&mut t, "m2", "mcp__fs__search", json!({"query": "needle"}));
    let now = later(&t, i, 61_500);
    snapshot("other_tools", &mut t, now);
}

#[test]
fn notices() {
    let mut t = Transcript::new();
    t.push(CellKind::Notice { text: "Context compacted: 120k → 18k tokens.".into(), level: NoticeLevel::Info });
    t.apply(&AgentEvent::Error {
        message:
            "The provider failed after 5 attempts: HTTP 529 overloaded. Try again later or switch models with /model."
                .into(),
    });
    snapshot("notices", &mut t, Instant::now());
}

#[test]
fn shell() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    let mut running = ShellCell::new("npm run dev -- --port 3000", t0);
    running.tail.push("> dev\n> vite --port 3000\n\n  VITE v5.0.0  ready in 312 ms\n");
    t.push(CellKind::Shell(running));
    let mut done = ShellCell::new("git status --short", t0);
    done.tail.push(" M crates/tui/src/lib.rs\n?? crates/tui/src/transcript/\n");
    done.exit_code = Some(0);
    done.duration_ms = Some(45);
    t.push(CellKind::Shell(done));
    let mut failed = ShellCell::new("false", t0);
    failed.exit_code = Some(1);
    failed.duration_ms = Some(3);
    t.push(CellKind::Shell(failed));
    snapshot("shell", &mut t, t0 + Duration::from_millis(12_400));
}

#[test]
fn a_whole_turn_through_events() {
    let mut t = Transcript::new();
    t.push(CellKind::user("What does main do?"));
    t.apply(&AgentEvent::TurnStart { turn: 1 });
    t.apply(&AgentEvent::TextDelta { text: "Let me ".into() });
    t.apply(&AgentEvent::TextDelta { text: "read it.".into() });
    t.apply(&AgentEvent::AssistantMessage {
        message: Message::assistant_text("Let me read it."),
        stop_reason: None,
        usage: Default::default(),
        model: "m".into(),
    });
    start_tool(&mut t, "r1", "read", json!({"path": "src/main.rs"}));
    end_tool(
        &mut t,
        "r1",
        "read",
        "fn main() {}",
        false,
        Some(json!({"start_line": 1, "end_line": 1, "total_lines": 1})),
        1,
    );
    t.apply(&AgentEvent::TurnEnd { turn: 1 });
    t.apply(&AgentEvent::TurnStart { turn: 2 });
    t.apply(&AgentEvent::TextDelta { text: "It does **nothing**: the body is empty.".into() });
    t.apply(&AgentEvent::AssistantMessage {
        message: Message::assistant_text("It does **nothing**: `main` has an empty body."),
        stop_reason: None,
        usage: Default::default(),
        model: "m".into(),
    });
    assert_eq!(t.len(), 4);
    insta::assert_snapshot!("whole_turn", support::render(&mut t, 60, &PLAIN, Instant::now()));
}

#[test]
fn bash_moved_to_the_background_says_where_it_went() {
    let mut t = Transcript::new();
    start_tool(&mut t, "c1", "bash", json!({"command": "npm run dev"}));
    t.apply(&AgentEvent::ToolExecutionUpdate { id: "c1".into(), text: "listening on :3000\n".into() });
    let details = tern_protocol::ToolDetails::Background(tern_protocol::BackgroundDetails {
        background_task: "bg-1".into(),
        sandbox: None,
        sandbox_warning: None,
        subagent_type: None,
    });
    t.apply(&AgentEvent::ToolExecutionEnd {
        id: "c1".into(),
        name: "bash".into(),
        content: vec![tern_protocol::ToolResultContent::text("listening on :3000\n[The person moved this command…]")],
        is_error: false,
        details: Some(Box::new(details)),
        duration_ms: 4200,
    });
    let shown = support::render(&mut t, 80, &PLAIN, Instant::now());
    assert!(shown.contains("in the background as bg-1 · 4.2s · 1 line"), "{shown}");
    assert!(shown.contains("listening on :3000"), "{shown}");
}

/// An approved plan stays as Markdown under `✓ plan approved`; a refused one
/// is an error cell like any other.
#[test]
fn plan_approved() {
    let mut t = Transcript::new();
    let plan = json!({"plan": "## Plan\n\n1. Guard the **empty** case\n2. Add a test"});
    for (id, approved) in [("p1", false), ("p2", true)] {
        start_tool(&mut t, id, "exit_plan_mode", plan.clone());
        let details = tern_protocol::ToolDetails::Plan(tern_protocol::PlanDetails {
            mode: approved.then_some(tern_protocol::Mode::AcceptEdits),
            approved: Some(approved),
            ended: false,
        });
        let text = if approved { "The person approved the plan." } else { "The person did not approve the plan." };
        t.apply(&AgentEvent::ToolExecutionEnd {
            id: id.into(),
            name: "exit_plan_mode".into(),
            content: vec![tern_protocol::ToolResultContent::text(text)],
            is_error: !approved,
            details: Some(Box::new(details)),
            duration_ms: 4000,
        });
    }
    snapshot("plan_approved", &mut t, Instant::now());
}
