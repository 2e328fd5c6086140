//! Frame-time benchmark for `cargo xtask bench` (built in release): a
//! 10,000-cell transcript while a bash cell streams 100,000 lines, drawn into
//! an off-screen buffer after every chunk, as the TUI would at its frame cap.
//! Prints one JSON object: frame times (median, p99, max) with the streaming
//! transcript and with an empty one (the baseline), the same stream drawn
//! inline (the live part only, with the bytes each frame writes), and
//! resident memory before and after streaming.

use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;
use tern_protocol::AgentEvent;
use tern_tui::theme::Theme;
use tern_tui::transcript::{CellKind, ScrollState, Transcript};

fn rss_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn percentile(mut v: Vec<Duration>, p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn main() {
    let area = Rect::new(0, 0, 120, 50);
    let theme = Theme::default();
    let now = Instant::now();

    // Baseline: the same frames over an empty transcript.
    let mut empty = Transcript::new();
    let mut scroll = ScrollState { offset: 0 };
    let mut base = Vec::new();
    for _ in 0..500 {
        let mut buf = Buffer::empty(area);
        let t = Instant::now();
        empty.render(area, &mut buf, &mut scroll, &theme, now);
        base.push(t.elapsed());
    }

    // 10,000 cells: prompts, markdown answers, finished tool calls.
    let mut tr = Transcript::new();
    for i in 0..2_500u32 {
        tr.push(CellKind::user(format!("prompt {i}: look at the parser again")));
        tr.apply(&AgentEvent::TextDelta {
            text: format!("## Step {i}\n\nI looked at `src/lib.rs` and found **{i}** issues:\n\n- first\n- second\n\n```rust\nfn f{i}() -> u32 {{ {i} }}\n```\n"),
        });
        let id = format!("t{i}");
        tr.apply(&AgentEvent::ToolCallStart {
            id: id.clone(),
            name: "bash".into(),
            input: json!({"command": format!("cargo test {i}")}),
        });
        tr.apply(&AgentEvent::ToolExecutionUpdate { id: id.clone(), text: "running 3 tests\ntest a ... ok\n".into() });
        tr.apply(&AgentEvent::ToolExecutionEnd {
            id,
            name: "bash".into(),
            content: vec![tern_protocol::ToolResultContent::text("test result: ok")],
            is_error: false,
            details: Some(Box::new(tern_protocol::ToolDetails::Bash(tern_protocol::BashDetails {
                exit_code: Some(0),
                ..Default::default()
            }))),
            duration_ms: 12,
        });
        tr.apply(&AgentEvent::Notice { message: format!("note {i}") });
    }
    let cells = tr.len();
    let _ = tr.height(area.width);
    let before_kb = rss_kb("VmRSS:");

    // A bash cell streaming 100,000 lines, 100 lines per chunk, a frame per chunk.
    tr.apply(&AgentEvent::ToolCallStart {
        id: "s".into(),
        name: "bash".into(),
        input: json!({"command": "seq 100000"}),
    });
    let mut frames = Vec::new();
    let mut line = 0u64;
    while line < 100_000 {
        let mut chunk = String::new();
        for _ in 0..100 {
            line += 1;
            chunk.push_str(&format!("output line {line} of the long running command\n"));
        }
        tr.apply(&AgentEvent::ToolExecutionUpdate { id: "s".into(), text: chunk });
        let mut buf = Buffer::empty(area);
        let t = Instant::now();
        tr.render(area, &mut buf, &mut scroll, &theme, now + Duration::from_millis(line));
        frames.push(t.elapsed());
    }
    let after_kb = rss_kb("VmRSS:");
    let peak_kb = rss_kb("VmHWM:");

    // Inline: the finished cells are written into the scrollback once, then
    // each frame draws the live part (the streaming bash cell's tail, at most
    // 40 rows) and writes what changed, as the terminal would get it.
    let mut inline_frames = Vec::new();
    let mut inline_bytes = Vec::new();
    let mut screen = tern_tui::inline::InlineScreen::new();
    let _ = tr.take_settled(area.width, false);
    for i in 0..1_000u64 {
        tr.apply(&AgentEvent::ToolExecutionUpdate { id: "s".into(), text: format!("more output {i}\n") });
        let t = Instant::now();
        let live_h = tr.live_height(area.width).min(40) as u16;
        let live = Rect::new(0, 0, area.width, live_h.max(1));
        let mut buf = Buffer::empty(live);
        tr.render_live(live, &mut buf, &theme, now + Duration::from_millis(100_000 + i));
        let mut out = Vec::new();
        let _ = screen.draw(&mut out, &[], &buf, Some((2, live.height - 1)), false);
        inline_frames.push(t.elapsed());
        inline_bytes.push(out.len());
    }
    inline_bytes.sort_unstable();
    let out = json!({
        "cells": cells,
        "frames": frames.len(),
        "frame_ms": {"median": percentile(frames.clone(), 0.5), "p99": percentile(frames.clone(), 0.99), "max": percentile(frames, 1.0)},
        "empty_frame_ms": {"median": percentile(base.clone(), 0.5), "p99": percentile(base, 0.99)},
        "inline_frame_ms": {"median": percentile(inline_frames.clone(), 0.5), "p99": percentile(inline_frames.clone(), 0.99), "max": percentile(inline_frames, 1.0)},
        "inline_bytes": {"median": inline_bytes[inline_bytes.len() / 2], "max": inline_bytes.last().copied().unwrap_or(0)},
        "rss_kb": {"before_stream": before_kb, "after_stream": after_kb, "peak": peak_kb},
        "area": [area.width, area.height],
    });
    println!("{out}");
}
