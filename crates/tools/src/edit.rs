//! `edit {path, old_string, new_string, replace_all?}` and the multi-edit
//! form `{path, edits: [{old_string, new_string, replace_all?}]}`: exact
//! replacements applied in order, all or nothing, keeping line endings and
//! a BOM, guarded by read-first and unchanged-since checks.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{EditDetails, ExecutionMode, FileChange, ToolDefinition, ToolDetails};
use tokio_util::sync::CancellationToken;

use crate::ToolEnv;
use crate::diff::{ChangedSpan, DiffSummary, diff_summary};
use crate::edit_match::{apply_edit, apply_edit_in_place};
use crate::file_guard::{
    DirLock, check_fresh, read_text_bytes, record_written, resolve_target, target_for, write_text_bytes,
};

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "edit".into(),
        description: "Replace exact text in a file you have read (unchanged since).\n\
             - `old_string` must match exactly, whitespace included, and once, unless `replace_all`; add context lines to make it unique.\n\
             - Several changes to one file: `edits: [{old_string, new_string, replace_all?}]` instead; in order, all or nothing.\n\
             - Line endings and BOM are kept. A unique match differing only in indentation, trailing spaces or quotes is used and named."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {"type": "string"},
                            "new_string": {"type": "string"},
                            "replace_all": {"type": "boolean"}
                        },
                        "required": ["old_string", "new_string"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        snippet: Some("edit: replace exact text in a file (single or multi-edit, all or nothing), with a diff".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

#[derive(Debug, Clone, Deserialize)]
struct OneEdit {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    old_string: Option<String>,
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
    edits: Option<Vec<OneEdit>>,
}

impl Args {
    fn edits(self) -> Result<(String, Vec<OneEdit>), ToolError> {
        match (self.edits, self.old_string, self.new_string) {
            (Some(edits), None, None) => Ok((self.path, edits)),
            (None, Some(old_string), Some(new_string)) => {
                Ok((self.path, vec![OneEdit { old_string, new_string, replace_all: self.replace_all }]))
            }
            (Some(_), _, _) => Err(ToolError::new(
                "edit: both `edits` and a top-level `old_string`/`new_string` were given, so it is not clear which \
                 changes you mean; nothing was changed. Put every change in `edits`, or send only `old_string` + \
                 `new_string`.",
            )),
            _ => Err(ToolError::new("edit: pass `old_string` and `new_string` (or an `edits` list).")),
        }
    }
}

/// The edit tool.
pub struct EditTool {
    env: Arc<ToolEnv>,
}

impl EditTool {
    /// An edit tool for `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for EditTool {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        crate::tool_args::alias(&mut input, "file_path", "path");
        input
    }

    fn accept_near_misses(&self, input: &mut Value) -> Vec<String> {
        let mut notes = Vec::new();
        // One change at the top level beside an empty list: that change.
        let pair = input.get("old_string").is_some() && input.get("new_string").is_some();
        if pair
            && input.get("edits").and_then(Value::as_array).is_some_and(Vec::is_empty)
            && let Some(obj) = input.as_object_mut()
        {
            obj.remove("edits");
            notes.push("`edits: []` beside `old_string`/`new_string` as that one edit".to_string());
        }
        // The same one change given twice, in `edits` and at the top level: that change.
        if pair
            && let Some([only]) = input.get("edits").and_then(Value::as_array).map(Vec::as_slice)
            && ["old_string", "new_string"].iter().all(|k| only.get(k).is_some() && only.get(k) == input.get(k))
            && only.get("replace_all").and_then(Value::as_bool).unwrap_or(false)
                == input.get("replace_all").and_then(Value::as_bool).unwrap_or(false)
            && let Some(obj) = input.as_object_mut()
        {
            for k in ["old_string", "new_string", "replace_all"] {
                obj.remove(k);
            }
            notes.push("the same change in `edits` and at the top level as that one edit".to_string());
        }
        notes.extend(crate::tool_args::existing_path(&self.env.workspace, input));
        notes
    }

    /// An edit of a missing, unread or since-changed file, or one whose
    /// changes are given twice, cannot work: say so before anyone is asked
    /// for permission.
    fn precheck(&self, input: &Value) -> Result<(), ToolError> {
        if let Ok(args) = serde_json::from_value::<Args>(input.clone()) {
            args.edits()?;
        }
        let Some(path) = input.get("path").and_then(Value::as_str) else { return Ok(()) };
        let target = resolve_target(&self.env, path);
        match std::fs::metadata(&target.real) {
            Ok(meta) => check_fresh(&self.env, &target, &meta, "edit"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(missing(&self.env, &target)),
            Err(_) => Ok(()),
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
            let args: Args = crate::tool_args::parse("edit", input)?;
            let (path, edits) = args.edits()?;
            let target = target_for(&self.env, &path, ctx.judged.as_ref());
            let _lock = self.env.file_locks.lock(&target.real).await;
            let env = self.env.clone();
            crate::tool_args::blocking("edit", move || edit_file(&env, &target, &edits)).await
        })
    }
}

/// The file to edit is not there: name the nearest that is, if any (never
/// edited in its place).
fn missing(env: &ToolEnv, target: &crate::file_guard::Target) -> ToolError {
    let shown = &target.shown;
    match crate::path_hints::did_you_mean(env, &target.real) {
        Some(hint) => ToolError::new(format!("No such file: {shown}.{hint} (To create a new file, use write.)")),
        None => ToolError::new(format!("{shown} does not exist. To create a file, use write.")),
    }
}

/// How the file's text is stored on disk.
struct Encoding {
    bom: bool,
    crlf: bool,
}

fn decode(bytes: Vec<u8>, shown: &str) -> Result<(String, Encoding), ToolError> {
    let bom = bytes.starts_with(b"\xEF\xBB\xBF");
    let mut body = bytes;
    if bom {
        body.drain(..3);
    }
    let text = String::from_utf8(body).map_err(|e| {
        ToolError::new(format!(
            "{shown} is not UTF-8 text (invalid byte at offset {}); edit only changes UTF-8 files. Convert it first (e.g. with iconv via bash) or change it with bash.",
            e.utf8_error().valid_up_to()
        ))
    })?;
    // CRLF only when every line ends that way; mixed files are edited as they are.
    let lf = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    let crlf = lf > 0 && text.matches("\r\n").count() == lf;
    let text = if crlf { text.replace("\r\n", "\n") } else { text };
    Ok((text, Encoding { bom, crlf }))
}

/// The bytes to write: the text itself unless a BOM or CRLF endings must be
/// put back (no copy of a large file for the common case).
fn encode<'a>(text: &'a str, enc: &Encoding) -> std::borrow::Cow<'a, [u8]> {
    if !enc.bom && !enc.crlf {
        return std::borrow::Cow::Borrowed(text.as_bytes());
    }
    let mut out = Vec::with_capacity(text.len() + 3);
    if enc.bom {
        out.extend_from_slice(b"\xEF\xBB\xBF");
    }
    if enc.crlf {
        out.extend_from_slice(text.replace('\n', "\r\n").as_bytes());
    } else {
        out.extend_from_slice(text.as_bytes());
    }
    std::borrow::Cow::Owned(out)
}

/// The unified diff an `edit` (or `write`) call would make to its file, for
/// the permission question: the same matching and the same diff as the
/// tools use, computed without writing. `None` when it would fail, or the
/// file is not a regular file of at most 1 MB (a new file's `write` shows
/// its content instead).
pub fn change_preview(judged: &tern_protocol::JudgedPath, tool: &str, input: &Value) -> Option<String> {
    use std::io::Read;
    const MAX: u64 = 1 << 20;
    let rel = input.get("path").and_then(Value::as_str)?;
    // The file the decision is about, as the tool will open it: a link swapped in is no preview.
    let file = crate::pinned::open_no_symlinks(&judged.real, libc::O_RDONLY | libc::O_NONBLOCK).ok()?;
    let meta = file.metadata().ok()?;
    crate::pinned::check_identity(judged.identity, &meta).ok()?;
    if !meta.is_file() || meta.len() > MAX {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX).read_to_end(&mut bytes).ok()?;
    let (original, _) = decode(bytes, rel).ok()?;
    let changed = match tool {
        "write" => input.get("content").and_then(Value::as_str)?.to_string(),
        "edit" => {
            let args: Args = serde_json::from_value(input.clone()).ok()?;
            let (_, edits) = args.edits().ok()?;
            let mut text = original.clone();
            for e in &edits {
                let (old, new) = (e.old_string.replace("\r\n", "\n"), e.new_string.replace("\r\n", "\n"));
                text = apply_edit(&text, &old, &new, e.replace_all, rel).ok()?.content;
            }
            text
        }
        _ => return None,
    };
    Some(diff_summary(&original, &changed, rel).unified)
}

fn edit_file(env: &ToolEnv, target: &crate::file_guard::Target, edits: &[OneEdit]) -> Result<ToolOutput, ToolError> {
    let shown = &target.shown;
    // Other tern processes in this folder wait, then find the file changed.
    let dir = match target.open_dir(false) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(env, target));
        }
        Err(e) => return Err(ToolError::new(format!("Cannot edit {shown}: {e}"))),
    };
    let dir_lock = DirLock::of(env, &dir, target.real.parent().unwrap_or(&target.real))?;
    let meta = match target.stat_in(&dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(env, target));
        }
        Err(e) => return Err(ToolError::new(format!("Cannot edit {shown}: {e}"))),
    };
    if meta.is_dir() {
        return Err(ToolError::new(format!("{shown} is a directory, not a file.")));
    }
    // One descriptor: judged writable, checked fresh, read, and (in place) written.
    let opened = target.open_for_change(&dir, &meta, "edit")?;
    check_fresh(env, target, &opened.meta, "edit")?;
    let bytes =
        read_text_bytes(env, target, &opened).map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?;
    // The file's one copy, changed in place; `span` keeps what it replaced, for the diff.
    let (mut text, enc) = decode(bytes, shown)?;
    let room: usize = edits.iter().map(|e| e.new_string.len()).sum();
    text.reserve(room);
    let mut span = ChangedSpan::default();
    let mut replacements = 0;
    let mut fallback = false;
    for (i, e) in edits.iter().enumerate() {
        let old = e.old_string.replace("\r\n", "\n");
        let new = e.new_string.replace("\r\n", "\n");
        match apply_edit_in_place(&mut text, &mut span, &old, &new, e.replace_all, shown) {
            Ok((n, tolerant)) => {
                replacements += n;
                fallback |= tolerant;
            }
            Err(err) if edits.len() > 1 => {
                return Err(ToolError::new(format!(
                    "Edit {} of {} failed, so no change was written to {shown}: {}",
                    i + 1,
                    edits.len(),
                    err.0
                )));
            }
            Err(err) => return Err(ToolError::new(err.0)),
        }
    }
    write_text_bytes(env, target, &dir, &encode(&text, &enc), Some(&opened))
        .map_err(|e| ToolError::new(format!("Could not write {shown}: {e}. The file was not changed.")))?;
    record_written(env, target, &dir);
    drop(dir_lock);
    let DiffSummary { unified, hunks, added, removed } = span.diff(&text, shown);
    let mut msg = format!(
        "Edited {shown}: {replacements} replacement{} (+{added} −{removed} lines).",
        if replacements == 1 { "" } else { "s" }
    );
    if fallback {
        msg.push_str(" Note: the exact text was not found; a unique match differing only in whitespace or quotes was used — check the diff.");
    }
    for n in &target.notes {
        msg.push_str(&format!(" Note: {n}."));
    }
    msg.push('\n');
    msg.push_str(&crate::diff::bounded(&unified));
    Ok(ToolOutput::text(msg).with_details(ToolDetails::Edit(EditDetails {
        path: shown.clone(),
        replacements,
        fallback,
        change: FileChange { file: Some(target.real.clone()), diff: unified, hunks, added, removed },
    })))
}
