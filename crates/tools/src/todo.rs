//! `todo_write {todos: [{content, status, active_form}]}`: the model's
//! plan for a multi-step task. Each call replaces the whole list; the result
//! echoes it, and its details carry it for front ends (`todo_update` event).

use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, TodoDetails, TodoItem, TodoStatus, ToolDefinition, ToolDetails};
use tokio_util::sync::CancellationToken;

/// Most items a list may hold.
pub const MAX_ITEMS: usize = 100;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "todo_write".into(),
        description: "The todo list the person sees, for tasks of several steps. Each call replaces the whole list. Keep one item in_progress; mark it completed when done. `content`: imperative; `active_form`: present continuous."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "maxItems": MAX_ITEMS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "active_form": {"type": "string", "minLength": 1}
                        },
                        "required": ["content", "status", "active_form"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        }),
        snippet: Some("todo_write: keep the task's todo list (replaces the whole list; one item in progress)".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    todos: Vec<TodoItem>,
}

/// The todo tool; it holds the current list.
#[derive(Debug, Default)]
pub struct TodoTool {
    list: Mutex<Vec<TodoItem>>,
}

impl TodoTool {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current list.
    pub fn list(&self) -> Vec<TodoItem> {
        self.list.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// A todo list that cannot be taken, naming the items (1-based) at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TodoError {
    /// An item without content.
    #[error("item {item} has empty content; every item needs a short description.")]
    EmptyContent {
        /// The item, 1-based.
        item: usize,
    },
    /// More than one item in progress.
    #[error(
        "items {} are all in_progress; keep exactly one item in_progress and mark the others pending or completed.",
        items.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
    )]
    SeveralInProgress {
        /// The items in progress, 1-based.
        items: Vec<usize>,
    },
}

/// Check a new list: content present, at most one in progress.
pub fn validate(todos: &[TodoItem]) -> Result<(), TodoError> {
    if let Some(i) = todos.iter().position(|t| t.content.trim().is_empty()) {
        return Err(TodoError::EmptyContent { item: i + 1 });
    }
    let items: Vec<usize> =
        todos.iter().enumerate().filter(|(_, t)| t.status == TodoStatus::InProgress).map(|(i, _)| i + 1).collect();
    if items.len() > 1 {
        return Err(TodoError::SeveralInProgress { items });
    }
    Ok(())
}

fn render(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "Todo list cleared.".into();
    }
    let count = |s| todos.iter().filter(|t| t.status == s).count();
    let mut out = format!(
        "Todo list updated: {} done, {} in progress, {} pending.\n",
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending)
    );
    for t in todos {
        out.push_str(&format!("{} {}\n", t.status.mark(), t.content));
    }
    out.trim_end().to_string()
}

impl Tool for TodoTool {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        // Accept `activeForm` (another agents' spelling).
        if let Some(items) = input.get_mut("todos").and_then(Value::as_array_mut) {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                if !item.contains_key("active_form")
                    && let Some(v) = item.remove("activeForm")
                {
                    item.insert("active_form".into(), v);
                }
            }
        }
        input
    }

    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = crate::tool_args::parse("todo_write", input)?;
            validate(&args.todos).map_err(|e| ToolError::new(format!("todo_write: {e} The list was not changed.")))?;
            let text = render(&args.todos);
            if let Ok(mut l) = self.list.lock() {
                *l = args.todos.clone();
            }
            Ok(ToolOutput::text(text).with_details(ToolDetails::Todo(TodoDetails { todos: args.todos })))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: TodoStatus) -> TodoItem {
        TodoItem { content: content.into(), status, active_form: format!("Doing {content}") }
    }

    #[test]
    fn at_most_one_in_progress_and_no_empty_content() {
        assert!(validate(&[item("a", TodoStatus::InProgress), item("b", TodoStatus::Pending)]).is_ok());
        let e = validate(&[item("a", TodoStatus::InProgress), item("b", TodoStatus::InProgress)]).unwrap_err();
        assert!(e.to_string().contains("items 1, 2"), "{e}");
        assert!(validate(&[item(" ", TodoStatus::Pending)]).unwrap_err().to_string().contains("item 1"));
    }

    #[test]
    fn the_error_names_the_items_at_fault() {
        let list =
            [item("a", TodoStatus::Pending), item("b", TodoStatus::InProgress), item("c", TodoStatus::InProgress)];
        let e = validate(&list).unwrap_err();
        assert_eq!(e, TodoError::SeveralInProgress { items: vec![2, 3] });
        assert!(e.to_string().starts_with("items 2, 3 are all in_progress"), "{e}");
        let e = validate(&[item("a", TodoStatus::Pending), item("\t", TodoStatus::Pending)]).unwrap_err();
        assert_eq!(e, TodoError::EmptyContent { item: 2 });
        assert!(e.to_string().starts_with("item 2 has empty content"), "{e}");
    }

    #[test]
    fn renders_marks_and_counts() {
        let text = render(&[
            item("a", TodoStatus::Completed),
            item("b", TodoStatus::InProgress),
            item("c", TodoStatus::Pending),
        ]);
        assert_eq!(text, "Todo list updated: 1 done, 1 in progress, 1 pending.\n[x] a\n[>] b\n[ ] c");
        assert_eq!(render(&[]), "Todo list cleared.");
    }
}
