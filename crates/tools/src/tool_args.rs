//! Argument handling shared by the tools: tolerant normalisation of what
//! models commonly get slightly wrong (numbers and booleans sent as strings,
//! other agents' parameter names), and typed parsing with the tool named in
//! the error.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tern_agent_loop::{ToolError, ToolOutput};

/// Turn `"5"` into `5` for the given keys.
pub fn numbers_from_strings(input: &mut Value, keys: &[&str]) {
    for key in keys {
        if let Some(n) = input.get(*key).and_then(Value::as_str).and_then(|s| s.trim().parse::<u64>().ok()) {
            input[*key] = json!(n);
        }
    }
}

/// Turn `"true"` into `true` for the given keys.
pub fn bools_from_strings(input: &mut Value, keys: &[&str]) {
    for key in keys {
        if let Some(b) = input.get(*key).and_then(Value::as_str).and_then(|s| s.trim().parse::<bool>().ok()) {
            input[*key] = json!(b);
        }
    }
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

    #[test]
    fn normalises_common_slips() {
        let mut v = json!({"file_path": "a", "offset": "5", "x": "true", "limit": "many"});
        alias(&mut v, "file_path", "path");
        numbers_from_strings(&mut v, &["offset", "limit"]);
        bools_from_strings(&mut v, &["x"]);
        assert_eq!(v, json!({"path": "a", "offset": 5, "x": true, "limit": "many"}));
        let mut both = json!({"file_path": "a", "path": "b"});
        alias(&mut both, "file_path", "path");
        assert_eq!(both, json!({"file_path": "a", "path": "b"}));
    }
}
