//! What a tool call is about, as every front end titles it: the TUI draws
//! it (the subject plain, the rest dim), ACP sends it as the call's title.
//! One place reads the arguments for this.

use serde_json::Value;

use crate::canonical_tool_name;

/// A call's title: an optional lead (a subagent's type), the subject (a
/// command's first line, a path, a pattern) and qualifiers (a line range,
/// where a search looks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTitle {
    /// Before the subject (`explore` for a task).
    pub lead: Option<String>,
    /// What the call is about.
    pub subject: String,
    /// After it, each with its leading space (` lines 10-20`, ` in src`).
    pub qualifiers: Vec<String>,
}

impl CallTitle {
    /// The title as one line of text.
    pub fn text(&self) -> String {
        let lead = self.lead.as_deref().map(|l| format!("{l} ")).unwrap_or_default();
        format!("{lead}{}{}", self.subject, self.qualifiers.concat())
    }
}

/// `n one` or `n many`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

/// The first line of `text`, cleaned of escape sequences, and how many lines follow it.
pub fn first_line(text: &str) -> (String, usize) {
    let clean = crate::sanitize::clean(text);
    let mut lines = clean.trim().lines();
    let first = lines.next().unwrap_or("").to_string();
    (first, lines.count())
}

/// What the call `name` with `input` is about.
pub fn call_title(name: &str, input: &Value) -> CallTitle {
    let args = crate::CallArgs::of(input);
    let s = |v: Option<&str>| v.map(|v| first_line(v).0);
    let plain = |subject: String| CallTitle { subject, ..CallTitle::default() };
    match canonical_tool_name(name).as_str() {
        "bash" => {
            let (first, more) = first_line(args.command.unwrap_or(""));
            let qualifiers =
                if more > 0 { vec![format!(" (+{})", count(more as u64, "line", "lines"))] } else { Vec::new() };
            CallTitle { lead: None, subject: first, qualifiers }
        }
        "read" => {
            let range = match (args.offset, args.limit) {
                (Some(o), Some(l)) => Some(format!(" lines {o}-{}", o + l.saturating_sub(1))),
                (Some(o), None) => Some(format!(" from line {o}")),
                (None, Some(l)) => Some(format!(" first {l} lines")),
                (None, None) => None,
            };
            CallTitle { lead: None, subject: s(args.path).unwrap_or_default(), qualifiers: range.into_iter().collect() }
        }
        "write" | "edit" => plain(s(args.path).unwrap_or_default()),
        "ls" => plain(s(args.path).unwrap_or_else(|| ".".into())),
        "grep" | "glob" => {
            let mut qualifiers = Vec::new();
            if let Some(p) = s(args.path) {
                qualifiers.push(format!(" in {p}"));
            }
            if let Some(g) = s(args.glob) {
                qualifiers.push(format!(" {g}"));
            }
            if let Some(t) = s(args.file_type) {
                qualifiers.push(format!(" type {t}"));
            }
            CallTitle { lead: None, subject: s(args.pattern).unwrap_or_default(), qualifiers }
        }
        "todo_write" => plain(count(args.todos.unwrap_or(0) as u64, "item", "items")),
        "task" => CallTitle {
            lead: Some(s(args.subagent_type).filter(|t| !t.is_empty()).unwrap_or_else(|| "explore".into())),
            subject: s(args.description).unwrap_or_default(),
            qualifiers: Vec::new(),
        },
        "web_search" => plain(s(args.query).unwrap_or_default()),
        "web_fetch" => plain(s(args.url).unwrap_or_default()),
        // The model's questions: the first one asked, and how many more.
        "ask_user" => {
            let questions = input.get("questions").and_then(Value::as_array);
            let first = questions
                .and_then(|q| q.first())
                .and_then(|q| q.get("question"))
                .and_then(Value::as_str)
                .map(|q| first_line(q).0)
                .unwrap_or_default();
            let more = questions.map_or(0, |q| q.len().saturating_sub(1));
            let qualifiers = if more > 0 {
                vec![format!(" (+{})", count(more as u64, "question", "questions"))]
            } else {
                Vec::new()
            };
            CallTitle { lead: None, subject: first, qualifiers }
        }
        _ => plain(compact_args(input)),
    }
}

/// `key: value, key: value` for a tool nothing more is known of.
fn compact_args(input: &Value) -> String {
    let Some(obj) = input.as_object() else {
        return if input.is_null() { String::new() } else { first_line(&input.to_string()).0 };
    };
    let parts: Vec<String> = obj
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => first_line(s).0,
                other => first_line(&other.to_string()).0,
            };
            let v = if v.chars().count() > 60 { format!("{}…", v.chars().take(59).collect::<String>()) } else { v };
            format!("{k}: {v}")
        })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_models_questions_are_titled_by_the_first() {
        let input = serde_json::json!({"questions": [
            {"question": "Which database?", "options": [{"label": "Redis"}]},
            {"question": "Which port?"}
        ]});
        let t = call_title("ask_user", &input);
        assert_eq!((t.subject.as_str(), t.qualifiers), ("Which database?", vec![" (+1 question)".to_string()]));
    }

    #[test]
    fn each_tool_is_titled_by_what_it_works_on() {
        let t = call_title("bash", &json!({"command": "cargo test\necho done"}));
        assert_eq!(t.text(), "cargo test (+1 line)");
        assert_eq!(call_title("read", &json!({"path": "a.rs", "offset": 10, "limit": 5})).text(), "a.rs lines 10-14");
        assert_eq!(call_title("grep", &json!({"pattern": "fn", "path": "src"})).text(), "fn in src");
        assert_eq!(call_title("task", &json!({"description": "look"})).text(), "explore look");
        assert_eq!(call_title("mcp__x__y", &json!({"a": 1})).text(), "a: 1");
        // Escape sequences from the model never reach a title.
        assert_eq!(call_title("edit", &json!({"path": "a\u{1b}[2Jb.rs"})).subject, "ab.rs");
    }
}
