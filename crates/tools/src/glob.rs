//! `glob {pattern, path?}`: find files by name. `ignore` walks the tree in
//! parallel (honouring .gitignore, .ignore and hidden files), `globset`
//! matches each path relative to the search root, and the result lists the
//! most recently modified files first, because those are usually the ones a
//! task is about.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::future::BoxFuture;
use ignore::WalkState;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, SearchDetails, ToolDefinition, ToolDetails};
use tokio_util::sync::CancellationToken;

use crate::search_walk::{Hidden, PathKind, Root, existing_path, glob_set, place, walker};
use crate::{ToolEnv, display_path};

/// Paths returned at most.
pub const MAX_RESULTS: usize = 1000;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "glob".into(),
        description: format!(
            "Find files by glob, newest first. Without `/` the pattern matches names at any depth (`*.rs`); with `/` paths under `path` (default workspace root). Gitignored and hidden files are skipped unless named (`.github/**`). At most {MAX_RESULTS} paths."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        snippet: Some("glob: find files by name pattern, newest first".into()),
        execution_mode: ExecutionMode::Parallel,
    }
}

/// The tool's arguments.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GlobArgs {
    /// The glob.
    pub pattern: String,
    /// Directory to search.
    pub path: Option<String>,
}

/// The glob tool.
pub struct GlobTool {
    env: Arc<ToolEnv>,
}

impl GlobTool {
    /// A glob tool searching `env.workspace`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for GlobTool {
    fn accept_near_misses(&self, input: &mut Value) -> Vec<String> {
        crate::tool_args::existing_path(&self.env.workspace, input).into_iter().collect()
    }

    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let env = self.env.clone();
        crate::tool_args::run_blocking("glob", input, move |args: GlobArgs| {
            search(&env.workspace, &args, MAX_RESULTS, &cancel, env.deny_read.as_ref(), ctx.judged.as_ref())
        })
    }
}

/// Run one search synchronously, listing at most `max_results` paths (the
/// tool passes [`MAX_RESULTS`]; a benchmark may pass `usize::MAX`).
pub fn search(
    workspace: &Path,
    args: &GlobArgs,
    max_results: usize,
    cancel: &CancellationToken,
    deny: Option<&crate::DenyRead>,
    judged: Option<&tern_protocol::JudgedPath>,
) -> Result<ToolOutput, ToolError> {
    let opened = existing_path("glob", workspace, args.path.as_deref(), judged)?;
    let (root, shown_root, kind) = (opened.path.clone(), opened.shown.clone(), opened.kind);
    if kind == PathKind::File {
        return Err(ToolError::new(format!(
            "glob: {shown_root} is a file; `path` must be a directory to search in. \
             Pass its directory as `path`, or read the file directly."
        )));
    }
    let pattern = relative_pattern(&root, &args.pattern)?;
    let set = glob_set([pattern.as_str()]).map_err(|e| {
        ToolError::new(format!("glob: {e}. Patterns look like `**/*.rs`, `src/*.{{ts,tsx}}` or `docs/**/README.md`."))
    })?;
    let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    walker(&root, Hidden::for_patterns([pattern.as_str()]), deny).build_parallel().run(|| {
        let (set, root, found) = (&set, &root, &found);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            if set.is_match(rel) {
                let mtime = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
                if let Ok(mut f) = found.lock() {
                    f.push((mtime, entry.into_path()));
                }
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::new("glob: interrupted by the user before the search finished."));
    }
    let mut found = found.into_inner().map_err(|_| ToolError::new("glob: internal error: a search thread panicked"))?;
    let total = found.len();
    if total == 0 {
        return Ok(ToolOutput::text(format!(
            "No files match `{}` in {}. Gitignored and hidden files are not searched; \
                 try a broader pattern (e.g. `**/*name*`) or another path.",
            args.pattern,
            place(&shown_root)
        ))
        .with_details(ToolDetails::Search(SearchDetails { path: shown_root, ..SearchDetails::default() })));
    }
    newest_first(&mut found);
    found.truncate(max_results);
    // Only names still reached through real folders beneath the root are shown.
    retain_in_real_folders(&opened, &mut found)?;
    let lines: Vec<String> = found.iter().map(|(_, p)| display_path(workspace, p)).collect();
    let mut text = lines.join("\n");
    if total > found.len() {
        text.push_str(&format!(
            "\n[Showing the {} most recently modified of {total} matching files. \
             Narrow the search with a more specific pattern or path.]",
            found.len()
        ));
    }
    Ok(ToolOutput::text(text).with_details(ToolDetails::Search(SearchDetails {
        path: shown_root,
        total,
        shown: found.len(),
        truncated: total > found.len(),
        ..SearchDetails::default()
    })))
}

/// The pattern relative to the search root: an absolute pattern inside the
/// root has the root stripped; one outside it is an error.
fn relative_pattern(root: &Path, pattern: &str) -> Result<String, ToolError> {
    let p = pattern.trim();
    if p.is_empty() {
        return Err(ToolError::new("glob: `pattern` is empty; pass a glob such as `**/*.rs`."));
    }
    if Path::new(p).is_absolute() {
        let root_str = root.to_string_lossy();
        let root_str = root_str.trim_end_matches('/');
        return match p.strip_prefix(root_str).and_then(|rest| rest.strip_prefix('/')) {
            Some(rest) if !rest.is_empty() => Ok(rest.to_string()),
            _ => Err(ToolError::new(format!(
                "glob: the pattern `{p}` is an absolute path outside the search directory {}. \
                 Pass the directory to search as `path` and a relative pattern (e.g. `**/*.rs`).",
                root.display()
            ))),
        };
    }
    Ok(p.to_string())
}

/// Keep the files whose folder is still reached through real folders beneath
/// the root (a folder swapped for a link during the walk does not lead out).
/// Each folder is checked once, not each file: a big tree's files share far
/// fewer folders. The walk took files only (links are not followed), so the
/// name itself is a file's in that folder.
fn retain_in_real_folders(root: &Root, found: &mut Vec<(SystemTime, PathBuf)>) -> Result<(), ToolError> {
    use std::collections::HashSet;
    use std::os::unix::ffi::OsStrExt;
    let bytes = |p: &Path| p.as_os_str().as_bytes().to_vec();
    // Compared as bytes: Path's own order and hash go component by component, far slower.
    let mut seen = HashSet::new();
    let mut folders: Vec<PathBuf> = found
        .iter()
        .filter_map(|(_, p)| p.parent())
        .filter(|f| seen.insert(f.as_os_str().as_bytes()))
        .map(Path::to_path_buf)
        .collect();
    drop(seen);
    root.retain_held(&mut folders, |f| f).map_err(|e| ToolError::new(format!("glob: {}", e.message)))?;
    let held: HashSet<Vec<u8>> = folders.iter().map(|f| bytes(f)).collect();
    found.retain(|(_, p)| p.parent().is_some_and(|f| held.contains(f.as_os_str().as_bytes())));
    Ok(())
}

/// Most recently modified first; ties (and equal mtimes) by path.
fn newest_first(found: &mut [(SystemTime, PathBuf)]) {
    found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| path_order(&a.1, &b.1)));
}

/// The order of [`Path`]'s own comparison (component by component) for the
/// walker's paths, computed on the bytes: a separator sorts before any other
/// byte, which is what ending a component first means. Files extracted
/// together share their mtime, so most comparisons of a big tree's sort come
/// here, and Path's component parsing was the slow part of it.
fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let (a, b) = (a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
    let rank = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => rank(a[i]).cmp(&rank(b[i])),
        None => a.len().cmp(&b.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn paths_are_ordered_as_path_orders_them() {
        let names =
            ["a/b", "a-b", "a", "a/b/c", "a.b/c", "ab", "a/", "b", "a/bc", "a/b-c", "a b/c", "/x/a", "/x-/a", "/x/"];
        for x in names {
            for y in names {
                let (x, y) = (Path::new(x), Path::new(y));
                // Path ignores a trailing separator; the walker never yields one.
                if x.as_os_str().len() > 1 && x.to_string_lossy().ends_with('/')
                    || y.as_os_str().len() > 1 && y.to_string_lossy().ends_with('/')
                {
                    continue;
                }
                assert_eq!(super::path_order(x, y), x.cmp(y), "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn newest_first_then_by_path() {
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let mut v = vec![(t(1), PathBuf::from("b")), (t(5), PathBuf::from("z")), (t(1), PathBuf::from("a"))];
        newest_first(&mut v);
        let order: Vec<_> = v.iter().map(|(_, p)| p.display().to_string()).collect();
        assert_eq!(order, ["z", "a", "b"]);
    }

    #[test]
    fn only_files_in_real_folders_beneath_the_root_are_kept_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.join("d/e")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("l")).unwrap();
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let names = ["d/a", "l/a", "d/e/b", "gone/c", "d/c", "l/e/b", "top"];
        let mut found: Vec<_> = names.iter().enumerate().map(|(i, n)| (t(i as u64), ws.join(n))).collect();
        let root = crate::search_walk::existing_path("glob", &ws, None, None).unwrap();
        retain_in_real_folders(&root, &mut found).unwrap();
        let kept: Vec<_> = found.iter().map(|(_, p)| p.strip_prefix(&ws).unwrap().display().to_string()).collect();
        assert_eq!(kept, ["d/a", "d/e/b", "d/c", "top"]);
    }

    #[test]
    fn absolute_patterns_become_relative_to_the_root() {
        let root = Path::new("/repo");
        assert_eq!(relative_pattern(root, "/repo/src/*.rs").unwrap(), "src/*.rs");
        assert_eq!(relative_pattern(root, " **/*.rs ").unwrap(), "**/*.rs");
        assert!(relative_pattern(root, "/elsewhere/*.rs").unwrap_err().message.contains("outside"));
        assert!(relative_pattern(root, "/repository/*.rs").is_err());
        assert!(relative_pattern(root, "  ").unwrap_err().message.contains("empty"));
    }
}
