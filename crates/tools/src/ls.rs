//! `ls {path?, ignore?}`: a directory as an indented tree, breadth-first and
//! bounded. Every entry at one depth is listed before anything deeper, so a
//! large tree still shows its top levels; what did not fit is counted in
//! place (`… 57 more`) rather than silently dropped.
//!
//! The walk honours the same ignore rules as grep and glob (.gitignore,
//! .ignore, hidden entries). It deepens one level at a time, each level a
//! fresh sorted walk limited to that depth, and stops at the first level that
//! overflows the budget: the levels above are small by then, so re-walking
//! them costs little.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use globset::GlobSet;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, SearchDetails, ToolDefinition, ToolDetails};
use tokio_util::sync::CancellationToken;

use crate::ToolEnv;
use crate::search_walk::{Hidden, PathKind, Root, existing_path, glob_set, walker};

/// Entries listed at most.
pub const MAX_ENTRIES: usize = 1000;
/// Levels walked at most, whatever the budget.
const MAX_DEPTH: usize = 64;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "ls".into(),
        description: format!(
            "List a directory as a tree, breadth-first (directories end with `/`; default the workspace root). At most {MAX_ENTRIES} entries. `ignore`: globs to leave out. Gitignored and hidden entries are skipped."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "ignore": {"type": "array", "items": {"type": "string"}}
            },
            "additionalProperties": false
        }),
        snippet: Some("ls: a directory's tree (breadth-first, gitignore-aware, bounded)".into()),
        execution_mode: ExecutionMode::Parallel,
    }
}

/// The tool's arguments.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LsArgs {
    /// Directory to list.
    pub path: Option<String>,
    /// Globs of entries to leave out.
    #[serde(default)]
    pub ignore: Vec<String>,
}

/// The ls tool.
pub struct LsTool {
    env: Arc<ToolEnv>,
}

impl LsTool {
    /// An ls tool listing inside `env.workspace`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for LsTool {
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
        crate::tool_args::run_blocking("ls", input, move |args: LsArgs| {
            list(&env.workspace, &args, MAX_ENTRIES, &cancel, env.deny_read.as_ref(), ctx.judged.as_ref())
        })
    }
}

/// List synchronously, showing at most `budget` entries.
pub fn list(
    workspace: &Path,
    args: &LsArgs,
    budget: usize,
    cancel: &CancellationToken,
    deny: Option<&crate::DenyRead>,
    judged: Option<&tern_protocol::JudgedPath>,
) -> Result<ToolOutput, ToolError> {
    let opened = existing_path("ls", workspace, args.path.as_deref(), judged)?;
    let (shown, kind) = (opened.shown.clone(), opened.kind);
    if kind == PathKind::File {
        return Err(ToolError::new(format!("ls: {shown} is a file, not a directory. Read it with the read tool.")));
    }
    let ignore = if args.ignore.is_empty() {
        None
    } else {
        let set = glob_set(args.ignore.iter().map(String::as_str))
            .map_err(|e| ToolError::new(format!("ls: {e}. Ignore globs look like `*.log` or `build/**`.")))?;
        Some(Arc::new(set))
    };
    let mut depth = 1;
    let (entries, cut_at) = loop {
        if cancel.is_cancelled() {
            return Err(ToolError::new("ls: interrupted by the user."));
        }
        let entries = walk_to_depth(&opened, ignore.clone(), depth, deny);
        if entries.len() > budget {
            break (entries, Some(depth));
        }
        let deeper = entries.iter().any(|e| e.depth == depth && e.is_dir);
        if !deeper || depth >= MAX_DEPTH {
            break (entries, None);
        }
        depth += 1;
    };
    let header = if shown == "." { "./".to_string() } else { format!("{}/", shown.trim_end_matches('/')) };
    if entries.is_empty() {
        let why = if ignore.is_some() {
            "; hidden, gitignored and `ignore`d entries are not listed"
        } else {
            "; hidden and gitignored entries are not listed"
        };
        return Ok(ToolOutput::text(format!("{header} (no entries{why})"))
            .with_details(ToolDetails::Search(SearchDetails { path: shown, ..SearchDetails::default() })));
    }
    let items = plan(&entries, cut_at, budget);
    let mut text = render(&header, &items);
    let shown_count = items.iter().filter(|i| matches!(i, Item::Entry(_))).count();
    if let Some(d) = cut_at {
        text.push_str(&format!(
            "\n[Listing cut at {shown_count} of {} entries found down to depth {d}; `… N more` marks entries left out, \
             and directories at depth {d} were not expanded. List a subdirectory with `path`, or find files by name with glob.]",
            entries.len()
        ));
    }
    Ok(ToolOutput::text(text).with_details(ToolDetails::Search(SearchDetails {
        path: shown,
        total: entries.len(),
        shown: shown_count,
        truncated: cut_at.is_some(),
        ..SearchDetails::default()
    })))
}

/// One entry of the walk, in sorted tree order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    depth: usize,
    name: String,
    is_dir: bool,
}

/// A line of the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item<'a> {
    Entry(&'a Entry),
    /// `count` entries at `depth` left out.
    More {
        depth: usize,
        count: usize,
    },
}

/// Every entry down to `max_depth`, sorted by name within each directory and
/// in tree (depth-first) order.
fn walk_to_depth(
    opened: &Root,
    ignore: Option<Arc<GlobSet>>,
    max_depth: usize,
    deny: Option<&crate::DenyRead>,
) -> Vec<Entry> {
    let root = opened.path.as_path();
    let mut builder = walker(root, Hidden::Skip, deny);
    builder.max_depth(Some(max_depth)).sort_by_file_name(|a, b| a.cmp(b));
    if let Some(set) = ignore {
        let root: PathBuf = root.to_path_buf();
        builder
            .filter_entry(move |e| e.depth() == 0 || !set.is_match(e.path().strip_prefix(&root).unwrap_or(e.path())));
    }
    builder
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() > 0 && opened.holds(e.path()))
        .map(|e| Entry {
            depth: e.depth(),
            name: crate::paths::path_text(Path::new(&e.file_name())),
            is_dir: e.file_type().is_some_and(|t| t.is_dir()),
        })
        .collect()
}

/// Which entries to show: all of them when the walk was not cut; otherwise
/// everything above depth `cut_at`, then entries at `cut_at` in tree order
/// while the budget lasts, the rest counted per directory.
fn plan(entries: &[Entry], cut_at: Option<usize>, budget: usize) -> Vec<Item<'_>> {
    let Some(cut) = cut_at else { return entries.iter().map(Item::Entry).collect() };
    let shallow = entries.iter().filter(|e| e.depth < cut).count();
    let mut room = budget.saturating_sub(shallow);
    let mut items: Vec<Item<'_>> = Vec::new();
    for e in entries {
        if e.depth < cut || room > 0 {
            if e.depth == cut {
                room -= 1;
            }
            items.push(Item::Entry(e));
        } else if let Some(Item::More { count, .. }) = items.last_mut() {
            // Entries at the deepest level have no children in this walk, so
            // siblings left out are contiguous.
            *count += 1;
        } else {
            items.push(Item::More { depth: e.depth, count: 1 });
        }
    }
    items
}

fn render(header: &str, items: &[Item<'_>]) -> String {
    let mut out = String::from(header);
    for item in items {
        out.push('\n');
        match item {
            Item::Entry(e) => {
                out.push_str(&"  ".repeat(e.depth));
                out.push_str(&e.name);
                if e.is_dir {
                    out.push('/');
                }
            }
            Item::More { depth, count } => {
                out.push_str(&"  ".repeat(*depth));
                out.push_str(&format!("… {count} more"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn e(depth: usize, name: &str, is_dir: bool) -> Entry {
        Entry { depth, name: name.into(), is_dir }
    }

    #[test]
    fn renders_an_indented_tree() {
        let entries = [e(1, "src", true), e(2, "lib.rs", false), e(1, "Cargo.toml", false)];
        let items = plan(&entries, None, 10);
        assert_eq!(render("./", &items), "./\n  src/\n    lib.rs\n  Cargo.toml");
    }

    #[test]
    fn a_cut_keeps_upper_levels_and_counts_the_rest_in_place() {
        let entries = [
            e(1, "a", true),
            e(2, "a1", false),
            e(2, "a2", false),
            e(2, "a3", false),
            e(1, "b", true),
            e(2, "b1", false),
            e(2, "b2", false),
            e(1, "c", false),
        ];
        // Budget 5: the 3 top-level entries, then 2 of the 5 at depth 2.
        let items = plan(&entries, Some(2), 5);
        assert_eq!(render("./", &items), "./\n  a/\n    a1\n    a2\n    … 1 more\n  b/\n    … 2 more\n  c");
    }
}
