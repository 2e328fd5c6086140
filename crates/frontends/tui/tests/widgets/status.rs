//! The status line.

use std::time::{Duration, Instant};

use insta::assert_snapshot;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use tern_runtime::Mode;
use tern_tui::theme::Theme;
use tern_tui::widgets::status::{StatusInfo, render_status};

use crate::support::{at_widths, buffer, buffer_text};

fn info() -> StatusInfo {
    StatusInfo {
        model: "claude-sonnet-4-5".into(),
        mode: Mode::Default,
        context_pct: Some(12),
        tokens_in: 12_345,
        tokens_out: 1_234,
        cost_usd: 0.042,
        cwd: "~/proj".into(),
        branch: Some("main".into()),
        busy: None,
        queued: 0,
        background: 0,
        hint: None,
        alert: None,
    }
}

fn draw_with(info: &StatusInfo, width: u16, theme: &Theme, now: Instant) -> ratatui::buffer::Buffer {
    let mut buf = buffer(width, 1);
    render_status(info, Rect::new(0, 0, width, 1), &mut buf, theme, now);
    buf
}

fn draw(info: &StatusInfo, width: u16, now: Instant) -> String {
    buffer_text(&draw_with(info, width, &Theme::default(), now))
}

#[test]
fn idle() {
    let now = Instant::now();
    assert_snapshot!(at_widths(|w| draw(&info(), w, now)));
}

#[test]
fn busy_with_spinner() {
    let now = Instant::now();
    let mut s = info();
    s.busy = Some(("Thinking".into(), now - Duration::from_millis(3_250)));
    s.queued = 2;
    assert_snapshot!(at_widths(|w| draw(&s, w, now)));
}

#[test]
fn busy_with_a_hint() {
    let now = Instant::now();
    let mut s = info();
    s.busy = Some(("Running bash".into(), now - Duration::from_secs(75)));
    s.hint = Some("Ctrl+C again to quit".into());
    assert_snapshot!(at_widths(|w| draw(&s, w, now)));
}

#[test]
fn every_mode() {
    let now = Instant::now();
    let out = at_widths(|w| {
        [Mode::Default, Mode::AcceptEdits, Mode::Plan, Mode::Bypass]
            .iter()
            .map(|mode| {
                let mut s = info();
                s.mode = *mode;
                draw(&s, w, now)
            })
            .collect()
    });
    assert_snapshot!(out);
}

#[test]
fn bypass_mode_is_red_and_default_dim() {
    let now = Instant::now();
    let mut s = info();
    s.mode = Mode::Bypass;
    let row =
        |buf: &ratatui::buffer::Buffer| -> String { (0..120).map(|x| buf[(x, 0)].symbol().to_string()).collect() };
    let buf = draw_with(&s, 120, &Theme::default(), now);
    let at = row(&buf).find("bypass").unwrap();
    let x = u16::try_from(row(&buf)[..at].chars().count()).unwrap();
    assert_eq!(buf[(x, 0)].fg, Color::Red);
}

#[test]
fn narrow_widths_drop_the_least_important_items() {
    let now = Instant::now();
    let mut s = info();
    s.mode = Mode::AcceptEdits;
    s.busy = Some(("Thinking".into(), now - Duration::from_secs(3)));
    let out: String =
        [40u16, 50, 60, 70, 30, 20].iter().map(|w| format!("── width {w} ──\n{}", draw(&s, *w, now))).collect();
    assert_snapshot!(out);
    // What tern is doing keeps its place; the model's name gives way, the mode stays.
    for w in [40u16, 30] {
        let line = draw(&s, w, now);
        assert!(line.contains("⠧ Thinkin") && line.contains("accept-edits"), "{w}: {line}");
    }
}

#[test]
fn no_color_keeps_only_modifiers() {
    let now = Instant::now();
    let mut s = info();
    s.mode = Mode::Plan;
    s.context_pct = Some(91);
    s.busy = Some(("Thinking".into(), now - Duration::from_secs(1)));
    let theme = Theme::plain();
    assert_snapshot!(at_widths(|w| buffer_text(&draw_with(&s, w, &theme, now))));
    let buf = draw_with(&s, 120, &theme, now);
    let cells: Vec<_> = (0..120).map(|x| &buf[(x, 0)]).collect();
    assert!(cells.iter().all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    assert!(cells.iter().any(|c| c.modifier.contains(Modifier::BOLD)), "plan mode stays bold");
}

#[test]
fn background_tasks_are_counted_beside_what_runs() {
    let now = Instant::now();
    let mut s = info();
    s.background = 2;
    let idle = draw(&s, 120, now);
    assert!(idle.trim_start().starts_with("? /help · 2 bg"), "{idle}");
    s.busy = Some(("Running bash".into(), now - Duration::from_secs(4)));
    s.queued = 1;
    let busy = draw(&s, 120, now);
    assert!(busy.contains("Running bash 4s · 1 queued · 2 bg"), "{busy}");
    s.background = 0;
    assert!(!draw(&s, 120, now).contains(" bg"));
}
