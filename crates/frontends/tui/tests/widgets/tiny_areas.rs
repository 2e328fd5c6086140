//! Every widget draws into any area, however small, without panicking.

use std::time::Instant;

use crossterm::event::KeyCode;
use ratatui::layout::Rect;
use serde_json::json;
use tern_protocol::{TodoItem, TodoStatus};
use tern_runtime::{DecidedBy, Decision, PermissionRequest, Verdict};
use tern_tui::theme::Theme;
use tern_tui::widgets::composer::{Composer, SlashCommand};
use tern_tui::widgets::permission::PermissionPane;
use tern_tui::widgets::status::{StatusInfo, render_status};
use tern_tui::widgets::todo::render_todos;

use crate::support::{buffer, key};

#[test]
fn widgets_survive_tiny_areas() {
    let theme = Theme::default();
    let mut composer =
        Composer::new(vec![SlashCommand { name: "model".into(), description: "Choose the model".into() }], vec![]);
    composer.handle_paste("/mo日本語\twith a tab and a very long line that wraps");
    composer.set_text("/m");
    let popup = composer.popup().unwrap();
    let request = PermissionRequest {
        call_id: "c".into(),
        tool: "edit".into(),
        input: json!({"path": "a.rs", "old_string": "a\nb", "new_string": "c\nd"}),
        decision: Decision {
            verdict: Verdict::Ask,
            reason: "edits are asked in default mode".into(),
            decided_by: DecidedBy::Tier { tier: "edit".into() },
            suggestion: Some("edit(src/**)".into()),
            allowing_mode: None,
            bash: None,
            path: None,
        },
        diff: None,
    };
    let mut pane = PermissionPane::new(&request);
    let todos =
        vec![TodoItem { content: "Do it".into(), status: TodoStatus::InProgress, active_form: "Doing it".into() }];
    let info = StatusInfo {
        model: "m".repeat(30),
        mode: tern_runtime::Mode::Bypass,
        busy: Some(("Thinking".into(), Instant::now())),
        ..Default::default()
    };
    for width in 0..12 {
        for height in 0..6 {
            let area = Rect::new(0, 0, width, height);
            let mut buf = buffer(width, height);
            composer.render(area, &mut buf, &theme);
            popup.render(area, &mut buf, &theme);
            pane.render(area, &mut buf, &theme);
            render_todos(&todos, area, &mut buf, &theme);
            render_status(&info, area, &mut buf, &theme, Instant::now());
            composer.desired_height(width);
            pane.desired_height(width);
        }
    }
    pane.handle_key(key(KeyCode::Char('3')));
    pane.handle_paste("a long note that does not fit anywhere");
    for width in 0..12 {
        let mut buf = buffer(width, 8);
        pane.render(Rect::new(0, 0, width, 8), &mut buf, &theme);
    }
}
