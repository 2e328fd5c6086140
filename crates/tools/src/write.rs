//! `write {path, content}`: create or overwrite a file atomically, keeping
//! its identity (owner, mode, links, attributes: `file_guard`); overwriting
//! needs a fresh read of the file.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, FileChange, ToolDefinition, ToolDetails, WriteDetails};
use tokio_util::sync::CancellationToken;

use crate::diff::diff_summary;
use crate::file_guard::{Target, check_fresh, record_written, resolve_target, target_for};
use crate::{ToolEnv, human_bytes};

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "write".into(),
        description: "Create or overwrite a whole file with `content` (parent directories created). Overwriting needs a read of the file first. To change part of a file use edit."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
        snippet: Some("write: create or overwrite a whole file (atomic; read it first to overwrite)".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    content: String,
}

/// The write tool.
pub struct WriteTool {
    env: Arc<ToolEnv>,
}

impl WriteTool {
    /// A write tool for `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for WriteTool {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        crate::tool_args::alias(&mut input, "file_path", "path");
        input
    }

    /// Overwriting a file that was not read (or changed since) cannot work:
    /// say so before anyone is asked for permission.
    fn precheck(&self, input: &Value) -> Result<(), ToolError> {
        let Some(path) = input.get("path").and_then(Value::as_str) else { return Ok(()) };
        refuse_misrooted(&self.env, path)?;
        let target = resolve_target(&self.env, path);
        match std::fs::metadata(&target.real) {
            Ok(meta) if meta.is_file() => check_fresh(&self.env, &target, &meta, "overwrite"),
            _ => Ok(()),
        }
    }

    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = crate::tool_args::parse("write", input)?;
            let target = target_for(&self.env, &args.path, ctx.judged.as_ref());
            let _lock = self.env.file_locks.lock(&target.real).await;
            let env = self.env.clone();
            crate::tool_args::blocking("write", move || write_file(&env, &target, &args.content)).await
        })
    }
}

/// A relative path that would create a new file (and folders) under the
/// workspace while the same path read from the root — its leading `/` lost,
/// or the workspace's folders repeated — is there: two readings that touch
/// different files, so ask rather than guess.
fn refuse_misrooted(env: &ToolEnv, raw: &str) -> Result<(), ToolError> {
    let there = |p: &std::path::Path| p.symlink_metadata().is_ok() || p.parent().is_some_and(std::path::Path::is_dir);
    let Some(meant) = crate::misrooted(&env.workspace, raw, there) else { return Ok(()) };
    let as_written = crate::resolve_path(&env.workspace, raw);
    let (as_written, meant) = (crate::path_text(&as_written), crate::path_text(&meant));
    let exists = if std::path::Path::new(&meant).symlink_metadata().is_ok() {
        format!("{meant} exists")
    } else {
        format!("the folder of {meant} exists")
    };
    Err(ToolError::new(format!(
        "write: `{raw}` is relative, so it would create {as_written} (and its folders), but {exists}. \
         Which do you mean? Nothing was written. Call write again with the absolute path: {meant} for that file, \
         or {as_written} for a new one."
    )))
}

fn count_lines(s: &str) -> usize {
    if s.is_empty() { 0 } else { s.lines().count() }
}

fn lines_word(n: usize) -> String {
    if n == 1 { "1 line".into() } else { format!("{n} lines") }
}

fn write_file(env: &ToolEnv, target: &Target, content: &str) -> Result<ToolOutput, ToolError> {
    let shown = &target.shown;
    // The directory, made if missing, held open: every step below goes through it.
    let dir = target
        .open_dir(true)
        .map_err(|e| ToolError::new(format!("Cannot create the directory of {shown}: {e}. Nothing was written.")))?;
    // Other tern processes in this folder wait, then find the file changed.
    let dir_lock = crate::file_guard::DirLock::of(env, &dir, target.real.parent().unwrap_or(&target.real))?;
    let mut opened = None;
    let previous = match target.stat_in(&dir) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(format!("{shown} is a directory; give a file path inside it.")));
        }
        Ok(meta) => {
            // One descriptor: judged writable, checked fresh, read, and (in place) written.
            let file = opened.insert(target.open_for_change(&dir, &meta, "overwrite")?);
            check_fresh(env, target, &file.meta, "overwrite")?;
            // Kept for the diff; a non-UTF-8 original only gets a size note.
            Some(
                crate::file_guard::read_text_bytes(env, target, file)
                    .map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?,
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ToolError::new(format!("Cannot write {shown}: {e}"))),
    };
    crate::file_guard::write_text_bytes(env, target, &dir, content.as_bytes(), opened.as_ref())
        .map_err(|e| ToolError::new(format!("Could not write {shown}: {e}. Nothing was changed.")))?;
    record_written(env, target, &dir);
    drop(dir_lock);
    let lines = count_lines(content);
    let size = human_bytes(content.len() as u64);
    let mut details = WriteDetails {
        path: shown.clone(),
        created: previous.is_none(),
        lines,
        bytes: content.len(),
        // A new file: every line added (its text is the call's `content`).
        change: Some(FileChange { file: Some(target.real.clone()), added: lines, ..FileChange::default() }),
    };
    let mut msg = match &previous {
        None => format!("Created {shown} ({}, {size}).", lines_word(lines)),
        Some(old) => {
            let old_text = String::from_utf8_lossy(old);
            let d = diff_summary(&old_text, content, shown);
            let (added, removed) = (d.added, d.removed);
            details.change =
                Some(FileChange { file: Some(target.real.clone()), diff: d.unified, hunks: d.hunks, added, removed });
            format!(
                "Overwrote {shown} ({}, {size}; was {}, {}; +{} −{} lines).",
                lines_word(lines),
                lines_word(count_lines(&old_text)),
                human_bytes(old.len() as u64),
                added,
                removed
            )
        }
    };
    for n in &target.notes {
        msg.push_str(&format!(" Note: {n}."));
    }
    Ok(ToolOutput::text(msg).with_details(ToolDetails::Write(details)))
}
