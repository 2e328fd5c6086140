//! The todo panel.

use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use tern_protocol::{TodoItem, TodoStatus};
use tern_tui::theme::Theme;
use tern_tui::widgets::todo::{render_todos, todo_height};

use crate::support::{at_widths, buffer, buffer_text};

fn item(content: &str, active: &str, status: TodoStatus) -> TodoItem {
    TodoItem { content: content.into(), status, active_form: active.into() }
}

fn mixed() -> Vec<TodoItem> {
    vec![
        item("Read the config loader", "Reading the config loader", TodoStatus::Completed),
        item("Write a failing test for nested tables", "Writing a failing test", TodoStatus::Completed),
        item(
            "Fix the merge of user and project config",
            "Fixing the merge of user and project config so that project keys win",
            TodoStatus::InProgress,
        ),
        item("Run the whole test suite", "Running the whole test suite", TodoStatus::Pending),
        item("Update docs/configuration.md", "Updating the docs", TodoStatus::Pending),
    ]
}

fn draw(todos: &[TodoItem], width: u16, height: u16) -> String {
    let mut buf = buffer(width, height);
    render_todos(todos, Rect::new(0, 0, width, height), &mut buf, &Theme::default());
    buffer_text(&buf)
}

#[test]
fn mixed_statuses() {
    let todos = mixed();
    assert_snapshot!(at_widths(|w| draw(&todos, w, todo_height(&todos, w))));
}

#[test]
fn done_items_are_struck_through() {
    let todos = mixed();
    let mut buf = buffer(80, 6);
    render_todos(&todos, Rect::new(0, 0, 80, 6), &mut buf, &Theme::default());
    assert!(buf[(3, 1)].modifier.contains(Modifier::CROSSED_OUT));
    assert!(!buf[(3, 3)].modifier.contains(Modifier::CROSSED_OUT));
}

#[test]
fn empty_takes_no_rows() {
    assert_eq!(todo_height(&[], 80), 0);
    assert_eq!(todo_height(&mixed(), 120), 6);
}

#[test]
fn a_short_area_folds_done_items_and_cuts_the_tail() {
    let mut todos = mixed();
    todos.extend((1..=4).map(|i| item(&format!("Follow-up {i}"), "", TodoStatus::Pending)));
    assert_snapshot!(draw(&todos, 60, 5));
}
