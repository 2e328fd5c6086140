//! A built-in call's arguments as front ends show them, read from the
//! model's JSON in this one place (titles, permission previews, editor
//! locations), so no front end reads a call's input key by key. The tools
//! parse their own input (with their tolerance for near misses); this is a
//! view for showing, never for deciding.

use serde_json::Value;

/// One replacement of an `edit` call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditArg<'a> {
    /// The text replaced.
    pub old_string: &'a str,
    /// What replaces it.
    pub new_string: &'a str,
    /// Every occurrence, not one.
    pub replace_all: bool,
}

/// The arguments of a built-in call, each when given (and of the right type).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallArgs<'a> {
    /// `path` (or Claude's `file_path`).
    pub path: Option<&'a str>,
    /// bash's `command`.
    pub command: Option<&'a str>,
    /// write's `content`.
    pub content: Option<&'a str>,
    /// edit's replacements: `edits`, or the one `old_string`/`new_string`.
    pub edits: Vec<EditArg<'a>>,
    /// edit's top-level `replace_all` (it covers every replacement).
    pub replace_all: bool,
    /// read's `offset` and `limit`.
    pub offset: Option<u64>,
    /// See `offset`.
    pub limit: Option<u64>,
    /// grep's and glob's `pattern`.
    pub pattern: Option<&'a str>,
    /// grep's `glob` filter.
    pub glob: Option<&'a str>,
    /// grep's `type` filter.
    pub file_type: Option<&'a str>,
    /// grep's `output_mode`.
    pub output_mode: Option<&'a str>,
    /// todo_write's item count.
    pub todos: Option<usize>,
    /// task's `subagent_type` and `description`.
    pub subagent_type: Option<&'a str>,
    /// See `subagent_type`.
    pub description: Option<&'a str>,
    /// web_search's `query`.
    pub query: Option<&'a str>,
    /// web_fetch's `url`.
    pub url: Option<&'a str>,
    /// exit_plan_mode's `plan`.
    pub plan: Option<&'a str>,
}

impl<'a> CallArgs<'a> {
    /// The arguments in `input` (anything but an object gives none).
    pub fn of(input: &'a Value) -> Self {
        let s = |k: &str| input.get(k).and_then(Value::as_str);
        let edit = |v: &'a Value| EditArg {
            old_string: v.get("old_string").and_then(Value::as_str).unwrap_or_default(),
            new_string: v.get("new_string").and_then(Value::as_str).unwrap_or_default(),
            replace_all: v.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
        };
        let edits = match input.get("edits").and_then(Value::as_array) {
            Some(list) => list.iter().map(edit).collect(),
            None if input.get("old_string").is_some() || input.get("new_string").is_some() => vec![edit(input)],
            None => Vec::new(),
        };
        CallArgs {
            path: s("path").or_else(|| s("file_path")),
            command: s("command"),
            content: s("content"),
            edits,
            replace_all: input.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
            offset: input.get("offset").and_then(Value::as_u64),
            limit: input.get("limit").and_then(Value::as_u64),
            pattern: s("pattern"),
            glob: s("glob"),
            file_type: s("type"),
            output_mode: s("output_mode"),
            todos: input.get("todos").and_then(Value::as_array).map(Vec::len),
            subagent_type: s("subagent_type"),
            description: s("description"),
            query: s("query"),
            url: s("url"),
            plan: s("plan"),
        }
    }

    /// Whether any replacement is of every occurrence (a top-level
    /// `replace_all` counts for all of them).
    pub fn replaces_all(&self) -> bool {
        self.replace_all || self.edits.iter().any(|e| e.replace_all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_reading_of_each_argument() {
        let single = json!({"file_path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": true});
        let a = CallArgs::of(&single);
        assert_eq!(a.path, Some("a.rs"), "Claude's name for it");
        assert_eq!(a.edits, [EditArg { old_string: "x", new_string: "y", replace_all: true }]);
        let many = json!({"path": "b.rs", "edits": [{"old_string": "1", "new_string": "2"}], "replace_all": true});
        let b = CallArgs::of(&many);
        assert_eq!(b.edits.len(), 1);
        assert!(!b.edits[0].replace_all && b.replaces_all(), "a top-level replace_all covers every edit");
        assert_eq!(CallArgs::of(&json!({"todos": [1, 2]})).todos, Some(2));
        assert_eq!(CallArgs::of(&json!("not an object")), CallArgs::default());
        assert_eq!(CallArgs::of(&json!({"path": 7})).path, None, "the wrong type is not given");
    }
}
