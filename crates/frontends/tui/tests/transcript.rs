#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The transcript as a whole: reflow on resize, streaming, colour, scrolling,
//! search, and the cost of a frame.

mod support;

use std::fmt::Write as _;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use serde_json::json;
use support::{buffer_text, draw, end_tool, render, start_tool, style_dump};
use tern_protocol::{AgentEvent, ContentBlock, Message, RetryInfo, Role};
use tern_tui::markdown::render_markdown;
use tern_tui::theme::Theme;
use tern_tui::transcript::{CellKind, NoticeLevel, ScrollState, Transcript};

const PLAIN: Theme =
    Theme { color: false, palette: tern_tui::theme::Palette::Dark, depth: tern_tui::theme::ColorDepth::Indexed };
const COLOR: Theme =
    Theme { color: true, palette: tern_tui::theme::Palette::Dark, depth: tern_tui::theme::ColorDepth::Indexed };

fn session() -> Transcript {
    let mut t = Transcript::new();
    t.push(CellKind::user("Why does the build fail on CI but not locally? It started after the last merge."));
    t.push(CellKind::Assistant {
        markdown: "Two likely causes:\n\n1. A **feature flag** that CI enables (`--all-features`) and you do not.\n2. A newer toolchain on CI.\n\n```sh\ncargo build --all-features --locked\n```".into(),
        streaming: false,
    });
    start_tool(&mut t, "b1", "bash", json!({"command": "cargo build --all-features --locked"}));
    t.apply(&AgentEvent::ToolExecutionUpdate {
        id: "b1".into(),
        text: "error[E0433]: failed to resolve: use of undeclared crate or module `serde_yaml`\n".into(),
    });
    end_tool(&mut t, "b1", "bash", "…", true, Some(json!({"exit_code": 101, "total_lines": 1})), 8_400);
    t.push(CellKind::Notice {
        text: "Auto-compaction is off; 12% of the context is left.".into(),
        level: NoticeLevel::Warning,
    });
    t
}

#[test]
fn resize_reflows_everything() {
    let mut t = session();
    let mut out = String::from("──── width 80 ────\n");
    out.push_str(&render(&mut t, 80, &PLAIN, Instant::now()));
    out.push_str("──── width 40 (same transcript, resized) ────\n");
    out.push_str(&render(&mut t, 40, &PLAIN, Instant::now()));
    insta::assert_snapshot!("resize_80_to_40", out);
}

#[test]
fn streaming_a_code_fence() {
    let mut t = Transcript::new();
    let chunks = ["Here is the fix:\n\n``", "`rust\nfn main() {\n    println!(\"hi\");", "\n}\n``", "`\n\nDone", "."];
    let mut out = String::new();
    for (i, chunk) in chunks.iter().enumerate() {
        t.apply(&AgentEvent::TextDelta { text: (*chunk).into() });
        writeln!(out, "──── after chunk {} {:?} ────", i + 1, chunk).unwrap();
        out.push_str(&render(&mut t, 40, &PLAIN, Instant::now()));
    }
    assert_eq!(t.len(), 1, "every delta grows the same cell");
    insta::assert_snapshot!("streaming_code_fence", out);
}

#[test]
fn colour_and_no_colour() {
    let mut t = Transcript::new();
    t.push(CellKind::Assistant {
        markdown: "## Fix\n\nUse `Option` and **return early**:\n\n```rust\nlet x = input.first()?; // no panic\n```"
            .into(),
        streaming: false,
    });
    start_tool(&mut t, "e1", "edit", json!({"path": "src/lib.rs"}));
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -7,2 +7,2 @@\n fn f() {\n-    a.unwrap()\n+    a?\n";
    end_tool(&mut t, "e1", "edit", "ok", false, Some(json!({"added": 1, "removed": 1, "diff": diff})), 5);
    t.push(CellKind::Notice { text: "failed".into(), level: NoticeLevel::Error });
    let mut out = String::from("──── colour ────\n");
    out.push_str(&style_dump(&draw(&mut t, 50, &COLOR, Instant::now())));
    out.push_str("──── NO_COLOR ────\n");
    out.push_str(&style_dump(&draw(&mut t, 50, &PLAIN, Instant::now())));
    insta::assert_snapshot!("styles", out);
}

#[test]
fn no_colour_means_no_colour_anywhere() {
    let mut t = session();
    t.push(CellKind::Assistant { markdown: super_markdown(), streaming: false });
    let buf = draw(&mut t, 80, &PLAIN, Instant::now());
    for cell in buf.content() {
        assert!(cell.fg == Color::Reset && cell.bg == Color::Reset, "coloured cell {cell:?}");
    }
    let buf = draw(&mut t, 80, &COLOR, Instant::now());
    assert!(buf.content().iter().any(|c| c.fg == Color::Green), "colour theme shows colour");
    assert!(buf.content().iter().all(|c| c.bg == Color::Reset), "never a background colour");
}

fn super_markdown() -> String {
    "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\ndef f():\n    return 'x'  # c\n```\n> q\n\n[l](http://x)"
        .into()
}

#[test]
fn scroll_offset_is_clamped() {
    let mut t = Transcript::new();
    for i in 0..100 {
        t.push(CellKind::user(format!("message {i}")));
    }
    // 100 one-row cells with a blank row between them.
    assert_eq!(t.height(40), 199);
    let area = Rect::new(0, 0, 40, 10);
    let mut buf = Buffer::empty(area);
    let mut scroll = ScrollState { offset: 10_000 };
    t.render(area, &mut buf, &mut scroll, &PLAIN, Instant::now());
    assert_eq!(scroll.offset, 189);
    assert_eq!(buffer_text(&buf).lines().next(), Some("› message 0"));
    let mut scroll = ScrollState::default();
    t.render(area, &mut buf, &mut scroll, &PLAIN, Instant::now());
    assert_eq!(scroll.offset, 0);
    assert_eq!(buffer_text(&buf).lines().last(), Some("› message 99"));
    // Content shorter than the window starts at the top.
    let mut short = Transcript::new();
    short.push(CellKind::user("hi"));
    let mut scroll = ScrollState { offset: 5 };
    short.render(area, &mut buf, &mut scroll, &PLAIN, Instant::now());
    assert_eq!(scroll.offset, 0);
    assert_eq!(buffer_text(&buf), "› hi\n\n\n\n\n\n\n\n\n\n");
}

#[test]
fn new_output_does_not_move_a_scrolled_window() {
    let mut t = Transcript::new();
    for i in 0..50 {
        t.push(CellKind::user(format!("message {i}")));
    }
    let area = Rect::new(0, 0, 40, 5);
    let mut buf = Buffer::empty(area);
    let mut scroll = ScrollState { offset: 20 };
    t.render(area, &mut buf, &mut scroll, &PLAIN, Instant::now());
    let before = buffer_text(&buf);
    t.push(CellKind::Assistant { markdown: "one\n\ntwo\n\nthree".into(), streaming: true });
    t.render(area, &mut buf, &mut scroll, &PLAIN, Instant::now());
    assert_eq!(scroll.offset, 26, "moved up by the new cell's six rows");
    assert_eq!(buffer_text(&buf), before);
    // Following the end (offset 0) keeps following.
    let mut follow = ScrollState::default();
    t.render(area, &mut buf, &mut follow, &PLAIN, Instant::now());
    assert_eq!(follow.offset, 0);
    assert!(buffer_text(&buf).contains("three"));
}

#[test]
fn a_frame_redraws_only_what_changed() {
    let mut t = Transcript::new();
    for i in 0..10_000 {
        let kind = match i % 4 {
            0 => CellKind::user(format!("question {i} with some words to wrap around the edge of the row")),
            1 => CellKind::Assistant {
                markdown: format!("Answer **{i}**:\n\n- one\n- two\n\n`code` and text"),
                streaming: false,
            },
            2 => CellKind::Notice { text: format!("notice {i}"), level: NoticeLevel::Info },
            _ => CellKind::Thinking { text: format!("thinking {i}\nmore"), streaming: false },
        };
        t.push(kind);
    }
    t.set_theme(PLAIN);
    let total = t.height(80);
    assert_eq!(t.wraps_done(), 10_000);
    let area = Rect::new(0, 0, 80, 40);
    let mut buf = Buffer::empty(area);
    let mut scroll = ScrollState::default();
    let now = Instant::now();
    t.render(area, &mut buf, &mut scroll, &PLAIN, now);
    assert_eq!(t.wraps_done(), 10_000, "a frame at the same width redraws no cell");
    scroll.offset = total / 2;
    t.render(area, &mut buf, &mut scroll, &PLAIN, now);
    assert_eq!(t.wraps_done(), 10_000, "scrolling redraws no cell");
    assert!(buffer_text(&buf).contains("question"));
    // Streaming into the last cell redraws that cell only.
    t.apply(&AgentEvent::TextDelta { text: "streamed".into() });
    t.apply(&AgentEvent::TextDelta { text: " more".into() });
    let mut follow = ScrollState::default();
    t.render(area, &mut buf, &mut follow, &PLAIN, now);
    assert_eq!(t.wraps_done(), 10_001);
    assert!(buffer_text(&buf).contains("streamed more"));
    // A running tool on screen is redrawn each frame (its clock), one cell.
    start_tool(&mut t, "b", "bash", json!({"command": "sleep 5"}));
    t.render(area, &mut buf, &mut follow, &PLAIN, now);
    let after = t.wraps_done();
    t.render(area, &mut buf, &mut follow, &PLAIN, now);
    assert_eq!(t.wraps_done(), after + 1);
}

#[test]
fn find_walks_up_and_wraps_around() {
    let mut t = Transcript::new();
    for i in 0..30 {
        let text = if i % 10 == 5 { format!("the NEEDLE is here ({i})") } else { format!("hay {i}") };
        t.push(CellKind::user(text));
    }
    // Cell i sits on row 2i; the total is 59 rows, so its offset is 58 - 2i.
    assert_eq!(t.height(40), 59);
    let first = t.find("needle", 40, 0, false);
    assert_eq!(first, Some(58 - 2 * 25));
    let second = t.find("needle", 40, first.unwrap(), false);
    assert_eq!(second, Some(58 - 2 * 15));
    let third = t.find("needle", 40, second.unwrap(), false);
    assert_eq!(third, Some(58 - 2 * 5));
    // Past the top it wraps to the bottom-most match.
    assert_eq!(t.find("needle", 40, third.unwrap(), false), first);
    // Backwards goes down, and wraps to the top-most.
    assert_eq!(t.find("needle", 40, third.unwrap(), true), second);
    assert_eq!(t.find("needle", 40, first.unwrap(), true), third);
    assert_eq!(t.find("absent", 40, 0, false), None);
    assert_eq!(t.find("", 40, 0, false), None);
}

#[test]
fn matches_are_highlighted_while_searching() {
    let mut t = Transcript::new();
    t.push(CellKind::user("find the Needle, then the needle"));
    t.set_highlight(Some("NEEDLE".into()));
    let buf = draw(&mut t, 40, &PLAIN, Instant::now());
    let marked: String = (0..40)
        .filter(|&x| buf[(x, 0)].modifier.contains(Modifier::REVERSED))
        .map(|x| buf[(x, 0)].symbol().to_string())
        .collect();
    assert_eq!(marked, "Needleneedle");
    t.set_highlight(None);
    let buf = draw(&mut t, 40, &PLAIN, Instant::now());
    assert!(buf.content().iter().all(|c| !c.modifier.contains(Modifier::REVERSED)));
}

#[test]
fn selection_moves_between_tools() {
    let mut t = session();
    t.push(CellKind::user("again"));
    assert!(t.select_last_tool());
    assert_eq!(t.selected(), Some(2));
    t.select_prev_tool();
    assert_eq!(t.selected(), Some(2), "no tool before it");
    t.select_next_tool();
    assert_eq!(t.selected(), Some(2), "no tool after it");
    // The selected cell's tool name is shown reversed.
    let buf = draw(&mut t, 80, &PLAIN, Instant::now());
    let text = buffer_text(&buf);
    let y = text.lines().position(|l| l.starts_with("✗ bash")).unwrap() as u16;
    let reversed: String = (0..80)
        .filter(|&x| buf[(x, y)].modifier.contains(Modifier::REVERSED))
        .map(|x| buf[(x, y)].symbol().to_string())
        .collect();
    assert_eq!(reversed, "bash");
    t.toggle_selected();
    assert!(matches!(t.cell(2), Some(CellKind::Tool(c)) if c.expanded));
    t.clear_selection();
    assert_eq!(t.selected(), None);
    let mut empty = Transcript::new();
    assert!(!empty.select_last_tool());
}

#[test]
fn the_final_message_replaces_streamed_text() {
    let mut t = Transcript::new();
    t.apply(&AgentEvent::ThinkingDelta { text: "hmm".into() });
    t.apply(&AgentEvent::TextDelta { text: "Hello wor".into() });
    let message = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Thinking { thinking: "hmm".into(), signature: None },
            ContentBlock::Text { text: "Hello world.".into() },
        ],
    };
    t.apply(&AgentEvent::AssistantMessage { message, stop_reason: None, usage: Default::default(), model: "m".into() });
    assert_eq!(t.len(), 2);
    assert!(matches!(t.cell(0), Some(CellKind::Thinking { streaming: false, .. })));
    assert!(
        matches!(t.cell(1), Some(CellKind::Assistant { markdown, streaming: false }) if markdown == "Hello world.")
    );
    // A message that was not streamed still shows.
    t.apply(&AgentEvent::AssistantMessage {
        message: Message::assistant_text("Second."),
        stop_reason: None,
        usage: Default::default(),
        model: "m".into(),
    });
    assert!(matches!(t.cell(2), Some(CellKind::Assistant { markdown, .. }) if markdown == "Second."));
}

#[test]
fn a_retry_that_discards_clears_the_partial_text() {
    let mut t = Transcript::new();
    t.apply(&AgentEvent::TextDelta { text: "partial".into() });
    t.apply(&AgentEvent::Retry(RetryInfo {
        attempt: 2,
        max_attempts: 3,
        delay_ms: 500,
        error: "connection reset".into(),
        cause: Default::default(),
        status: None,
        discard_partial: true,
    }));
    t.apply(&AgentEvent::TextDelta { text: "again".into() });
    insta::assert_snapshot!(render(&mut t, 60, &PLAIN, Instant::now()), @"• again");
}

/// A small deterministic generator, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn text(&mut self, len: usize) -> String {
        const PIECES: &[&str] = &[
            "\u{1b}[31m",
            "\u{1b}]8;;x\u{7}",
            "\u{1b}[",
            "\r",
            "\n",
            "\t",
            "\u{0}",
            "\u{7f}",
            "\u{85}",
            "é",
            "e\u{301}",
            "日本",
            "👍🏽",
            "👨‍👩‍👧",
            "\u{200b}",
            "\u{feff}",
            "```",
            "```rust\n",
            "|a|b|\n|-|-|\n",
            "# ",
            "- ",
            "1. ",
            "> ",
            "**",
            "_",
            "`",
            "[x](y)",
            "<b>",
            "&amp;",
            "\\",
            " ",
            "word",
            "longwordwithoutanyspacesatall",
            "\u{202e}",
            "---\n",
        ];
        let mut s = String::new();
        for _ in 0..len {
            if self.next().is_multiple_of(4) {
                let bytes: Vec<u8> = (0..4).map(|_| self.next() as u8).collect();
                s.push_str(&String::from_utf8_lossy(&bytes));
            } else {
                s.push_str(PIECES[(self.next() % PIECES.len() as u64) as usize]);
            }
        }
        s
    }
}

#[test]
fn random_input_never_panics() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..150 {
        let len = 1 + (rng.next() % 60) as usize;
        let text = rng.text(len);
        let width = (rng.next() % 130) as u16;
        let theme = if round % 2 == 0 { PLAIN } else { COLOR };
        let _ = render_markdown(&text, width, &theme);
        let mut t = Transcript::new();
        t.push(CellKind::user(text.clone()));
        t.push(CellKind::Assistant { markdown: text.clone(), streaming: true });
        t.push(CellKind::Thinking { text: text.clone(), streaming: false });
        t.push(CellKind::Notice { text: text.clone(), level: NoticeLevel::Error });
        let name = ["bash", "edit", "write", "read", "grep", "glob", "ls", "todo_write", "mcp__x__y"][round % 9];
        start_tool(
            &mut t,
            "x",
            name,
            json!({"command": text, "path": text, "pattern": text, "content": text, "todos": text}),
        );
        t.apply(&AgentEvent::ToolExecutionUpdate { id: "x".into(), text: text.clone() });
        let details =
            json!({"diff": text, "hunks": [{"lines": [{"tag": "+", "text": text}]}], "exit_code": 1, "total": 3});
        end_tool(&mut t, "x", name, &text, round % 3 == 0, Some(details), rng.next() % 100_000);
        t.set_show_thinking(round % 2 == 0);
        t.select_last_tool();
        t.toggle_selected();
        t.set_highlight(Some(rng.text(1)));
        for h in [0u16, 1, 3, 40] {
            let area = Rect::new(0, 0, width, h);
            let mut buf = Buffer::empty(area);
            let mut scroll = ScrollState { offset: (rng.next() % 50) as usize };
            t.render(area, &mut buf, &mut scroll, &theme, Instant::now());
        }
        let _ = t.find(&rng.text(1), width.max(1), (rng.next() % 100) as usize, round % 2 == 0);
    }
}

#[test]
fn rendering_into_part_of_a_buffer_stays_inside_it() {
    let mut t = session();
    let mut buf = Buffer::empty(Rect::new(0, 0, 30, 12));
    let area = Rect::new(5, 2, 20, 8);
    t.render(area, &mut buf, &mut ScrollState::default(), &PLAIN, Instant::now());
    for y in 0..12 {
        for x in 0..30 {
            if !area.contains((x, y).into()) {
                assert_eq!(buf[(x, y)].symbol(), " ", "drew outside the area at {x},{y}");
            }
        }
    }
    // An area larger than the buffer is cut to it.
    t.render(Rect::new(0, 0, 200, 200), &mut buf, &mut ScrollState::default(), &PLAIN, Instant::now());
}

#[test]
fn a_reply_that_broke_off_is_marked_as_not_kept() {
    let mut t = Transcript::new();
    t.apply(&AgentEvent::TextDelta { text: "Half of an ans".into() });
    t.apply(&AgentEvent::Error { message: "anthropic stream ended before the response was complete".into() });
    let Some(CellKind::Assistant { markdown, streaming }) = t.cell(0) else { panic!("{:?}", t.cell(0)) };
    assert!(markdown.starts_with("Half of an ans") && markdown.ends_with(tern_tui::transcript::DISCARDED));
    assert!(!streaming);
    // A reply interrupted by the person is kept (the loop keeps what was seen): no mark.
    let mut t = Transcript::new();
    t.apply(&AgentEvent::TextDelta { text: "Seen so far".into() });
    t.apply(&AgentEvent::AgentEnd { stop_reason: tern_protocol::AgentStopReason::Aborted });
    let Some(CellKind::Assistant { markdown, .. }) = t.cell(0) else { panic!() };
    assert_eq!(markdown, "Seen so far");
}

#[test]
fn a_pasted_prompt_folds_in_the_transcript() {
    let mut t = Transcript::new();
    let pasted: String = (1..=200).map(|i| format!("log line {i}\n")).collect();
    t.push(CellKind::user(format!("why does this fail?\n{pasted}")));
    let text = render(&mut t, 80, &PLAIN, Instant::now());
    assert!(text.contains("why does this fail?") && text.contains("log line 4"), "{text}");
    assert!(!text.contains("log line 5\n") && text.contains("… +196 more lines"), "{text}");
    // Ctrl+O on it shows it whole.
    assert!(t.select_last_tool(), "a folded prompt is selectable");
    t.toggle_selected();
    let text = render(&mut t, 80, &PLAIN, Instant::now());
    assert!(text.contains("log line 200") && !text.contains("more lines"), "{text}");
}

#[test]
fn a_paste_keeps_its_placeholder_in_the_transcript_until_expanded() {
    let mut t = Transcript::new();
    let pasted: String = (1..=200).map(|i| format!("log line {i}\n")).collect();
    t.push(CellKind::User {
        text: format!("why does this fail?\n{pasted}\nthanks"),
        folded: Some("why does this fail?\n[Pasted 200 lines]\nthanks".into()),
        expanded: false,
    });
    let text = render(&mut t, 80, &PLAIN, Instant::now());
    assert!(text.contains("[Pasted 200 lines]") && text.contains("thanks"), "{text}");
    assert!(!text.contains("log line 1") && text.contains("Ctrl+O shows them"), "{text}");
    assert!(t.select_last_tool());
    t.toggle_selected();
    let text = render(&mut t, 80, &PLAIN, Instant::now());
    assert!(text.contains("log line 1\n") && !text.contains("[Pasted"), "{text}");
}

#[test]
fn a_provider_search_shows_what_it_found_and_the_answer_its_sources() {
    use tern_protocol::WebSource;
    let page = |url: &str, title: &str| WebSource { url: url.into(), title: title.into(), cited_text: None };
    let mut t = Transcript::new();
    t.apply(&AgentEvent::TextDelta { text: "The edition is out.".into() });
    let message = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::ServerToolUse {
                id: "srv_1".into(),
                name: "web_search".into(),
                input: json!({"query": "rust 2026 edition"}),
                raw: None,
            },
            ContentBlock::ServerToolResult {
                tool_use_id: "srv_1".into(),
                sources: vec![
                    page("https://blog.rust-lang.org/e", "The edition"),
                    page("https://doc.rust-lang.org/g", "Guide"),
                ],
                error: None,
                raw: json!({}),
            },
            ContentBlock::Text { text: "The edition is out.".into() },
            ContentBlock::Citations { sources: vec![page("https://blog.rust-lang.org/e", "The edition")] },
            ContentBlock::Citations {
                sources: vec![
                    page("https://blog.rust-lang.org/e", "The edition"),
                    page("https://x.example/", "Title\nForged line"),
                ],
            },
        ],
    };
    t.apply(&AgentEvent::AssistantMessage { message, stop_reason: None, usage: Default::default(), model: "m".into() });
    let text = render(&mut t, 80, &PLAIN, Instant::now());
    assert!(text.contains("web_search rust 2026 edition · 2 results · by the provider"), "{text}");
    assert!(text.contains("The edition — https://blog.rust-lang.org/e"), "{text}");
    assert_eq!(text.matches("Sources").count(), 1, "citations of one answer are listed once: {text}");
    assert!(text.contains("Title Forged line — https://x.example/"), "a title is one line: {text}");
}

#[test]
fn a_media_command_shows_the_files_it_made() {
    let mut t = Transcript::new();
    start_tool(&mut t, "m1", "bash", json!({"command": "mmx image generate --prompt cat --out-dir media"}));
    t.apply(&AgentEvent::ToolExecutionUpdate {
        id: "m1".into(),
        text: "Saved media/cat-1.png\nSaved 'media/cat-2.webp' and media/cat-1.png (see https://x.example/a.png)\n"
            .into(),
    });
    end_tool(&mut t, "m1", "bash", "…", false, Some(json!({"exit_code": 0, "total_lines": 2})), 1_200);
    let text = render(&mut t, 100, &PLAIN, Instant::now());
    assert!(text.contains("generated: media/cat-1.png, media/cat-2.webp\n"), "{text}");
}

#[test]
fn a_selected_prompt_shows_it_is_selected() {
    let mut t = Transcript::new();
    t.push(CellKind::User { text: "a\n".repeat(30), folded: None, expanded: false });
    assert!(t.select_last_tool(), "a folded prompt can be selected");
    let buf = draw(&mut t, 60, &PLAIN, Instant::now());
    let text = buffer_text(&buf);
    let y = text.lines().position(|l| l.starts_with("› a")).unwrap() as u16;
    assert!(buf[(0, y)].modifier.contains(Modifier::REVERSED), "its marker is reversed:\n{text}");
    assert!(text.contains("(Ctrl+O to expand)"), "{text}");
    t.clear_selection();
    let buf = draw(&mut t, 60, &PLAIN, Instant::now());
    assert!(!buf[(0, y)].modifier.contains(Modifier::REVERSED));
}

/// Inline mode takes finished cells in order: a cell still streaming or
/// running holds back the ones after it; what is live is drawn from the
/// first cell not taken.
#[test]
fn finished_cells_are_taken_in_order_and_only_once() {
    let mut t = Transcript::new();
    t.push(CellKind::user("the prompt"));
    t.apply(&AgentEvent::TextDelta { text: "streaming answer".into() });
    t.push(CellKind::Notice { text: "a notice after it".into(), level: NoticeLevel::Info });
    let text = |rows: &[ratatui::text::Line]| rows.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    let taken = text(&t.take_settled(60, false));
    assert!(taken.contains("the prompt") && !taken.contains("streaming"), "{taken}");
    // The live part: the streaming answer and what waits behind it.
    assert_eq!(t.live_height(60), 4);
    let area = Rect::new(0, 0, 60, 4);
    let mut buf = Buffer::empty(area);
    t.render_live(area, &mut buf, &Theme::plain(), Instant::now());
    let live = buffer_text(&buf);
    assert!(
        live.contains("streaming answer") && live.contains("a notice after it") && !live.contains("prompt"),
        "{live}"
    );
    t.apply(&AgentEvent::TurnEnd { turn: 1 });
    let taken = text(&t.take_settled(60, false));
    assert!(taken.contains("streaming answer") && taken.contains("a notice after it"), "{taken}");
    assert!(t.take_settled(60, false).is_empty(), "taken once");
    assert_eq!(t.live_height(60), 0);
    // A clear is a new conversation: its epoch says so.
    let epoch = t.epoch();
    t.clear();
    assert_eq!(t.epoch(), epoch + 1);
}

/// A replayed call shows the figures its session kept (time, exit code,
/// line count, diff), and without them no invented ones: no time, and the
/// line count bash's own truncation note gives, not the kept tail's.
#[test]
fn a_replay_shows_only_the_figures_that_were_kept() {
    let call = |id: &str, name: &str, input: serde_json::Value| Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse { id: id.into(), name: name.into(), input }],
    };
    let output: String = (4002..=5001).map(|n| format!("{n}\n")).collect();
    let result = |id: &str, text: &str| Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: vec![tern_protocol::ToolResultContent::text(text)],
            is_error: false,
        }],
    };
    let truncated = format!("[Output truncated: showing the last 1000 of 5001 lines (4.9 KB of 24 KB).]\n{output}");
    let messages = [
        Message::user_text("go"),
        call("b", "bash", json!({"command": "seq 1 5001"})),
        result("b", &truncated),
        call("e", "edit", json!({"path": "a.txt", "old_string": "old", "new_string": "new"})),
        result("e", "Edited a.txt"),
    ];
    let mut t = tern_tui::transcript::Transcript::new();
    t.replay(&messages);
    insta::assert_snapshot!(render(&mut t, 60, &PLAIN, Instant::now()), @r"
    › go

    ✓ bash seq 1 5001
      done · 5001 lines
      … +4998 lines (Ctrl+O to expand)
      4999
      5000
      5001

    ✓ edit a.txt
    ");
    let details = |kind: &str, v: serde_json::Value| {
        let mut v = v;
        v["kind"] = kind.into();
        Some(Box::new(serde_json::from_value::<tern_protocol::ToolDetails>(v).unwrap()))
    };
    let runs = [
        tern_protocol::ToolRun {
            tool_use_id: "b".into(),
            duration_ms: 23_900,
            details: details("bash", json!({"exit_code": 0, "total_lines": 5001, "total_bytes": 24000})),
        },
        tern_protocol::ToolRun {
            tool_use_id: "e".into(),
            duration_ms: 4,
            details: details(
                "edit",
                json!({"path": "a.txt", "replacements": 1, "added": 1, "removed": 1, "hunks": [{"old_start": 1, "new_start": 1,
                    "lines": [{"tag": "-", "old": 1, "new": null, "text": "old"}, {"tag": "+", "old": null, "new": 1, "text": "new"}]}]}),
            ),
        },
    ];
    let mut t = tern_tui::transcript::Transcript::new();
    t.replay_with(&messages, &runs.into_iter().map(|r| (r.tool_use_id.clone(), r)).collect());
    insta::assert_snapshot!(render(&mut t, 60, &PLAIN, Instant::now()), @r"
    › go

    ✓ bash seq 1 5001
      exit 0 · 23.9s · 5001 lines
      … +4998 lines (Ctrl+O to expand)
      4999
      5000
      5001

    ✓ edit a.txt · +1 −1 · 4ms
      1 - old
      1 + new
    ");
}

/// A conversation shown again after `/rewind` keeps the figures its tool
/// cells had (time, exit code) for the calls that stay.
#[test]
fn a_conversation_shown_again_keeps_its_calls_figures() {
    let messages = vec![
        Message { role: Role::User, content: vec![ContentBlock::Text { text: "run it".into() }] },
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "c1".into(),
                name: "bash".into(),
                input: json!({"command": "make"}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "c1".into(),
                content: vec![tern_protocol::ToolResultContent::text("built")],
                is_error: false,
            }],
        },
    ];
    let mut t = Transcript::new();
    t.push(CellKind::user("run it"));
    start_tool(&mut t, "c1", "bash", json!({"command": "make"}));
    end_tool(&mut t, "c1", "bash", "built", false, Some(json!({"exit_code": 0})), 23_900);
    let runs = t.tool_runs();
    t.clear();
    t.replay_with(&messages, &runs);
    let shown = render(&mut t, 80, &Theme::plain(), Instant::now());
    assert!(shown.contains("23.9s"), "{shown}");
}
