//! `grep {pattern, path?, glob?, type?, output_mode?, -i?, -n?, -A/-B/-C?,
//! multiline?, head_limit?, offset?}`: search file contents with ripgrep's
//! own libraries — `ignore` walks the tree in parallel (honouring .gitignore,
//! .ignore and hidden files), `grep-regex` compiles the pattern and
//! `grep-searcher` searches each file, skipping binary ones.
//!
//! Results are sorted by path so that the same search gives the same answer,
//! and bounded (entries and bytes) with a notice that says how to page on.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, SearchDetails, ToolDefinition, ToolDetails};
use tokio_util::sync::CancellationToken;

use crate::grep_page::{Line, LineKind, PageCollector, content_line, display_text, notice, paginate};
use crate::search_walk::{Hidden, PathKind, existing_path, place, walker};
use crate::{ToolEnv, display_path};

/// Entries (lines in content mode, files otherwise) returned by default.
pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// Bytes of results returned at most.
pub const MAX_BYTES: usize = 50 * 1024;
/// Characters kept of one matching line.
pub const MAX_LINE_CHARS: usize = 2000;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "grep".into(),
        description: format!(
            "Search file contents by regex (ripgrep syntax); use it, not grep/rg in bash.\n\
             - `path`: file or directory (default workspace root); gitignored, hidden and binary files are skipped.\n\
             - Filter by `glob` (`*.rs`, `!*.min.js`) or `type` (rust, py, ts, …).\n\
             - `output_mode`: `files_with_matches` (default), `content` (`path:line:text`, -A/-B/-C context) or `count`.\n\
             - At most `head_limit` entries (default {DEFAULT_HEAD_LIMIT}, 0 = all) and {} KB; page with `offset`.\n\
             - `multiline`: `.` matches newlines. Escape metacharacters for literal text: `foo\\(`.",
            MAX_BYTES / 1024
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "glob": {"type": "string"},
                "type": {"type": "string"},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                "-i": {"type": "boolean"},
                "-n": {"type": "boolean"},
                "-A": {"type": "integer", "minimum": 0},
                "-B": {"type": "integer", "minimum": 0},
                "-C": {"type": "integer", "minimum": 0},
                "multiline": {"type": "boolean"},
                "head_limit": {"type": "integer", "minimum": 0},
                "offset": {"type": "integer", "minimum": 0}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        snippet: Some("grep: regex search of file contents (ripgrep), gitignore-aware, paged".into()),
        execution_mode: ExecutionMode::Parallel,
    }
}

/// What to report per file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines (`path:line:text`).
    Content,
    /// Paths of files with a match.
    #[default]
    FilesWithMatches,
    /// Matching lines per file (`path:N`).
    Count,
}

/// The tool's arguments, as the model sends them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GrepArgs {
    /// The regular expression.
    pub pattern: String,
    /// File or directory to search.
    pub path: Option<String>,
    /// Glob(s) filtering the files searched, whitespace-separated.
    pub glob: Option<String>,
    /// A ripgrep file type name.
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    /// What to report.
    pub output_mode: Option<OutputMode>,
    /// Case insensitive.
    #[serde(rename = "-i")]
    pub case_insensitive: Option<bool>,
    /// Line numbers in content mode.
    #[serde(rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Lines of context after.
    #[serde(rename = "-A")]
    pub after: Option<usize>,
    /// Lines of context before.
    #[serde(rename = "-B")]
    pub before: Option<usize>,
    /// Lines of context around.
    #[serde(rename = "-C")]
    pub context: Option<usize>,
    /// Matches may span lines.
    pub multiline: Option<bool>,
    /// Entries returned at most (0: no limit).
    pub head_limit: Option<usize>,
    /// Entries skipped first.
    pub offset: Option<usize>,
}

/// The grep tool.
pub struct GrepTool {
    env: Arc<ToolEnv>,
}

impl GrepTool {
    /// A grep tool searching `env.workspace`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for GrepTool {
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
        crate::tool_args::run_blocking("grep", input, move |args: GrepArgs| {
            search(&env.workspace, &args, MAX_BYTES, &cancel, env.deny_read.as_ref(), ctx.judged.as_ref())
        })
    }
}

/// Run one search synchronously, returning at most `max_bytes` of results
/// (the tool passes [`MAX_BYTES`]; a benchmark may pass `usize::MAX`).
pub fn search(
    workspace: &Path,
    args: &GrepArgs,
    max_bytes: usize,
    cancel: &CancellationToken,
    deny: Option<&crate::DenyRead>,
    judged: Option<&tern_protocol::JudgedPath>,
) -> Result<ToolOutput, ToolError> {
    let opened = existing_path("grep", workspace, args.path.as_deref(), judged)?;
    let (root, shown_root, kind) = (opened.path.clone(), opened.shown.clone(), opened.kind);
    let mode = args.output_mode.unwrap_or_default();
    let multiline = args.multiline.unwrap_or(false);
    let matcher = build_matcher(&args.pattern, args.case_insensitive.unwrap_or(false), multiline)?;
    let builder = configured_walker(&root, kind, args, deny)?;
    let content = mode == OutputMode::Content;
    let (before, after) = if content {
        (args.before.or(args.context).unwrap_or(0), args.after.or(args.context).unwrap_or(0))
    } else {
        (0, 0)
    };
    let mut searcher = SearcherBuilder::new();
    searcher
        .binary_detection(BinaryDetection::quit(b'\0'))
        .line_number(content)
        .multi_line(multiline)
        .before_context(before)
        .after_context(after);
    let offset = args.offset.unwrap_or(0);
    let limit = match args.head_limit {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => DEFAULT_HEAD_LIMIT,
    };
    let (collector, errors) = walk(builder, &opened, &searcher, &matcher, mode, offset, limit, cancel);
    if cancel.is_cancelled() {
        return Err(ToolError::new("grep: interrupted by the user before the search finished."));
    }
    let collected =
        collector.into_inner().map_err(|_| ToolError::new("grep: internal error: a search thread panicked"))?.finish();
    let errors = errors.into_inner();
    let details = |shown: usize| {
        ToolDetails::Search(SearchDetails {
            path: shown_root.clone(),
            total: collected.total_entries,
            files: Some(collected.total_files),
            shown,
            offset: Some(offset),
            truncated: offset + shown < collected.total_entries,
            unreadable: errors,
        })
    };
    if collected.total_entries == 0 {
        let text = no_matches(args, &shown_root);
        return Ok(ToolOutput::text(text).with_details(details(0)));
    }
    if offset >= collected.total_entries {
        return Err(ToolError::new(format!(
            "grep: offset {offset} is past the end: there are {} results. Use an offset below {}.",
            collected.total_entries, collected.total_entries
        )));
    }
    let numbers = args.line_numbers.unwrap_or(true);
    let with_context = before > 0 || after > 0;
    let page = if content {
        let rows = collected.files.iter().flat_map(|(path, _, hits)| {
            let shown = Arc::<str>::from(display_path(workspace, path));
            let lines = match hits {
                Hits::Lines(lines) => lines.as_slice(),
                Hits::Count(_) | Hits::File => &[],
            };
            lines.iter().enumerate().map(move |(i, line)| {
                // Lines that do not follow the previous one start a new group.
                let follows = i.checked_sub(1).is_some_and(|p| lines[p].number + 1 == line.number);
                (shown.clone(), line, follows)
            })
        });
        paginate(rows, offset, limit, max_bytes, |(shown, line, follows)| {
            (content_line(shown, line, numbers), with_context && !follows)
        })
    } else {
        let rows = collected.files.iter();
        paginate(rows, offset, limit, max_bytes, |(path, _, hits)| match hits {
            Hits::Count(n) => (format!("{}:{n}", display_path(workspace, path)), false),
            Hits::Lines(_) | Hits::File => (display_path(workspace, path), false),
        })
    };
    let mut text = page.text.clone();
    if let Some(n) = notice(offset, &page, collected.total_entries, max_bytes) {
        text.push('\n');
        text.push_str(&n);
    }
    Ok(ToolOutput::text(text).with_details(details(page.shown)))
}

/// The walk over `root`: ignore rules, hidden paths the globs name, deny
/// rules, and the `glob` and `type` filters.
fn configured_walker(
    root: &Path,
    kind: PathKind,
    args: &GrepArgs,
    deny: Option<&crate::DenyRead>,
) -> Result<ignore::WalkBuilder, ToolError> {
    let globs: Vec<&str> = args.glob.as_deref().map(|g| g.split_whitespace().collect()).unwrap_or_default();
    let mut builder = walker(root, Hidden::for_patterns(globs.iter().copied()), deny);
    if !globs.is_empty() && kind == PathKind::Dir {
        let mut overrides = OverrideBuilder::new(root);
        for g in &globs {
            overrides.add(g).map_err(|e| ToolError::new(format!("grep: invalid glob `{g}`: {e}. {GLOB_HELP}")))?;
        }
        builder
            .overrides(overrides.build().map_err(|e| ToolError::new(format!("grep: invalid glob: {e}. {GLOB_HELP}")))?);
    }
    if let Some(t) = args.file_type.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        builder.types(file_types(t)?);
    }
    Ok(builder)
}

/// Search every file of the walk in parallel, collecting the page's hits;
/// also how many files could not be read.
#[allow(clippy::too_many_arguments)]
fn walk(
    builder: ignore::WalkBuilder,
    root: &crate::search_walk::Root,
    searcher: &SearcherBuilder,
    matcher: &RegexMatcher,
    mode: OutputMode,
    offset: usize,
    limit: usize,
    cancel: &CancellationToken,
) -> (Mutex<PageCollector<Hits>>, AtomicUsize) {
    let collector = Mutex::new(PageCollector::<Hits>::new(offset, limit));
    let errors = AtomicUsize::new(0);
    builder.build_parallel().run(|| {
        let mut searcher = searcher.build();
        let matcher = matcher.clone();
        let (collector, errors) = (&collector, &errors);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(_) => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    return WalkState::Continue;
                }
            };
            // A path given explicitly is searched even if it is a symlink.
            let searchable =
                entry.file_type().is_some_and(|t| t.is_file()) || entry.depth() == 0 && root.kind == PathKind::File;
            if !searchable {
                return WalkState::Continue;
            }
            let mut sink = FileSink { mode, lines: Vec::new(), count: 0 };
            // Beneath the root's descriptor, never following a link swapped in since the walk saw a file.
            let searched = root
                .open_file(entry.path())
                .and_then(|file| searcher.search_file(&matcher, &file, &mut sink).map_err(std::io::Error::other));
            if searched.is_err() {
                errors.fetch_add(1, Ordering::Relaxed);
            }
            let (entries, hits) = match mode {
                OutputMode::Content => (sink.lines.len(), Hits::Lines(sink.lines)),
                OutputMode::Count => (usize::from(sink.count > 0), Hits::Count(sink.count)),
                OutputMode::FilesWithMatches => (usize::from(sink.count > 0), Hits::File),
            };
            if entries > 0
                && let Ok(mut c) = collector.lock()
            {
                c.add(entry.into_path(), entries, hits);
            }
            WalkState::Continue
        })
    });
    (collector, errors)
}

/// What an empty search says: where it looked, with which filters, and what
/// it never searches.
fn no_matches(args: &GrepArgs, shown_root: &str) -> String {
    let mut text = format!("No matches for `{}` in {}", args.pattern, place(shown_root));
    let filters: Vec<String> = [
        args.glob.as_ref().map(|g| format!("glob `{g}`")),
        args.file_type.as_ref().map(|t| format!("type {t}")),
        args.case_insensitive.unwrap_or(false).then(|| "-i".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !filters.is_empty() {
        text.push_str(&format!(" (with {})", filters.join(", ")));
    }
    text.push_str(". Gitignored, hidden and binary files are not searched.");
    text
}

const GLOB_HELP: &str = "Globs look like `*.rs`, `src/**/*.ts` or `*.{js,ts}`; `!` in front excludes.";

fn build_matcher(pattern: &str, case_insensitive: bool, multiline: bool) -> Result<RegexMatcher, ToolError> {
    let mut b = RegexMatcherBuilder::new();
    // As ripgrep: `^`/`$` match at line boundaries; without multiline the
    // matcher knows lines end at `\n`, which enables the fast line search.
    b.multi_line(true).octal(false).case_insensitive(case_insensitive);
    if multiline {
        b.dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(pattern).map_err(|e| {
        let mut msg = format!("grep: invalid regex `{pattern}`:\n{e}\n");
        if !multiline && (pattern.contains("\\n") || e.to_string().contains("\\n")) {
            msg.push_str("To match across lines, pass `multiline: true`. ");
        }
        msg.push_str(
            "The pattern is a Rust regex (ripgrep syntax). To match a special character literally, escape it \
             with a backslash: `\\(`, `\\)`, `\\[`, `\\{`, `\\.`, `\\*`, `\\+`, `\\?`, `\\|`, `\\$`, `\\^`.",
        );
        ToolError::new(msg)
    })
}

/// ripgrep's file type `name`, or an error listing valid ones.
fn file_types(name: &str) -> Result<ignore::types::Types, ToolError> {
    let mut b = TypesBuilder::new();
    b.add_defaults();
    b.select(name);
    b.build().map_err(|_| {
        let defs = b.definitions();
        let by_ext: Vec<&str> =
            defs.iter().filter(|d| d.globs().iter().any(|g| g == &format!("*.{name}"))).map(|d| d.name()).collect();
        let hint =
            if by_ext.is_empty() { String::new() } else { format!(" Did you mean `{}`?", by_ext.join("` or `")) };
        let common = ["c", "cpp", "go", "java", "js", "json", "md", "py", "rust", "sh", "toml", "ts", "yaml"];
        ToolError::new(format!(
            "grep: unknown file type `{name}`.{hint} Types are ripgrep's names ({} in all), e.g. {}. \
             Or filter by name with `glob` (e.g. `*.{name}`).",
            defs.len(),
            common.join(", ")
        ))
    })
}

/// One file's results, kept until the page is rendered.
enum Hits {
    /// Content mode: matching and context lines.
    Lines(Vec<Line>),
    /// Count mode: matching lines.
    Count(u64),
    /// Files mode: the file matched.
    File,
}

/// Collects one file's results for the chosen mode.
struct FileSink {
    mode: OutputMode,
    lines: Vec<Line>,
    count: u64,
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        match self.mode {
            OutputMode::FilesWithMatches => {
                self.count = 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.count += mat.lines().count().max(1) as u64;
                Ok(true)
            }
            OutputMode::Content => {
                let first = mat.line_number().unwrap_or(0);
                for (i, line) in mat.lines().enumerate() {
                    let text = display_text(line, MAX_LINE_CHARS);
                    self.lines.push(Line { number: first + i as u64, kind: LineKind::Match, text });
                }
                self.count += 1;
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let text = display_text(ctx.bytes(), MAX_LINE_CHARS);
        self.lines.push(Line { number: ctx.line_number().unwrap_or(0), kind: LineKind::Context, text });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_regex_explains_escaping() {
        let err = build_matcher("foo(", false, false).unwrap_err();
        assert!(err.message.contains("unclosed group"), "{}", err.message);
        assert!(err.message.contains("escape it"), "{}", err.message);
        let err = build_matcher("a\\nb", false, false).unwrap_err();
        assert!(err.message.contains("multiline: true"), "{}", err.message);
        assert!(build_matcher("a\\nb", false, true).is_ok());
    }

    #[test]
    fn unknown_type_suggests_by_extension() {
        let err = file_types("rs").unwrap_err();
        assert!(err.message.contains("Did you mean `rust`?"), "{}", err.message);
        assert!(err.message.contains("e.g. c, cpp"), "{}", err.message);
        assert!(file_types("rust").is_ok());
    }
}
