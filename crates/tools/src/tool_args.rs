//! Argument handling shared by the tools: near-misses only file tools can
//! read (other agents' parameter names, a path that repeats the workspace's
//! folders; numbers sent as strings and the like are conformed for every
//! tool by `tern_agent_loop::conform_to_schema`), and typed parsing with
//! the tool named in the error.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tern_agent_loop::{ToolError, ToolOutput};

/// A `path` that is not there as written but repeats the workspace's own
/// folders ([`crate::misrooted`]) becomes the existing file it means, before
/// anyone judges it; the note says what was understood.
pub fn existing_path(workspace: &Path, input: &mut Value) -> Option<String> {
    let raw = input.get("path")?.as_str()?;
    let meant = crate::misrooted(workspace, raw, |p| p.symlink_metadata().is_ok())?;
    let meant = crate::path_text(&meant);
    let note = format!("`path: {}` as {meant}", Value::from(raw));
    input["path"] = Value::String(meant);
    Some(note)
}

/// Accept `from` as another name for `to` when `to` is absent.
pub fn alias(input: &mut Value, from: &str, to: &str) {
    if let Some(obj) = input.as_object_mut()
        && !obj.contains_key(to)
        && let Some(v) = obj.remove(from)
    {
        obj.insert(to.into(), v);
    }
}

/// Deserialize validated arguments; a failure names the tool.
pub fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::new(format!("{tool}: {e}")))
}

/// Run a tool's file-system work on the blocking pool; a panic or
/// cancellation of that task becomes an error naming the tool.
pub async fn blocking<F>(tool: &str, work: F) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|e| ToolError::new(format!("{tool}: internal error: {e}")))?
}

/// The body of a file-system tool's `execute`: parse the arguments as `A`
/// (an error names the tool), then run `work` on the blocking pool.
pub fn run_blocking<A, F>(
    tool: &'static str,
    input: Value,
    work: F,
) -> futures::future::BoxFuture<'static, Result<ToolOutput, ToolError>>
where
    A: DeserializeOwned + Send + 'static,
    F: FnOnce(A) -> Result<ToolOutput, ToolError> + Send + 'static,
{
    Box::pin(async move {
        let args: A = parse(tool, input)?;
        blocking(tool, move || work(args)).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_and_the_existing_path_meant() {
        let mut v = json!({"file_path": "a"});
        alias(&mut v, "file_path", "path");
        assert_eq!(v, json!({"path": "a"}));
        let mut both = json!({"file_path": "a", "path": "b"});
        alias(&mut both, "file_path", "path");
        assert_eq!(both, json!({"file_path": "a", "path": "b"}));

        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(ws.join("main.rs"), "").unwrap();
        let lost_slash = format!("{}/main.rs", ws.display().to_string().trim_start_matches('/'));
        let mut v = json!({"path": lost_slash});
        let note = existing_path(&ws, &mut v).unwrap();
        assert_eq!(v, json!({"path": ws.join("main.rs").display().to_string()}));
        assert_eq!(note, format!("`path: \"{lost_slash}\"` as {}", ws.join("main.rs").display()));
        let mut missing = json!({"path": "nope.rs"});
        assert_eq!(existing_path(&ws, &mut missing), None);
        assert_eq!(missing, json!({"path": "nope.rs"}));
    }
}
