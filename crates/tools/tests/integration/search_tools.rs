//! grep, glob and ls called directly on temp trees: output modes and
//! formats, filters (glob, type, case), context and multiline, paging and its
//! notices, ignore rules (.ignore, .gitignore inside a repository, hidden and
//! binary files), errors worded for the model, and ordering (by path for
//! grep, newest first for glob, breadth-first for ls).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput};
use tern_protocol::ToolResultContent;
use tern_tools::ToolEnv;
use tern_tools::glob::GlobTool;
use tern_tools::grep::GrepTool;
use tern_tools::ls::LsTool;
use tokio_util::sync::CancellationToken;

struct Fixture {
    dir: TempDir,
    _out: TempDir,
    env: Arc<ToolEnv>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnv::new(dir.path(), out.path()));
    Fixture { dir, _out: out, env }
}

impl Fixture {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn set_mtime(&self, rel: &str, secs: u64) {
        let f = std::fs::File::options().write(true).open(self.root().join(rel)).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
    }

    async fn call(&self, tool: &dyn Tool, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext { call_id: "call_1".into(), tool_name: name.into(), confinement: None, judged: None };
        let mut input = tool.prepare_arguments(input);
        let definition = match name {
            "grep" => tern_tools::grep::definition(),
            "glob" => tern_tools::glob::definition(),
            _ => tern_tools::ls::definition(),
        };
        // As the loop conforms it (numbers and booleans sent as strings, …).
        tern_agent_loop::conform_to_schema(&definition.input_schema, &mut input);
        tool.execute(ctx, input, CancellationToken::new(), Arc::new(|_| {})).await
    }

    async fn grep(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.call(&GrepTool::new(self.env.clone()), "grep", input).await
    }

    async fn grep_text(&self, input: Value) -> String {
        text(&self.grep(input).await.unwrap()).to_string()
    }

    async fn glob_text(&self, input: Value) -> String {
        text(&self.call(&GlobTool::new(self.env.clone()), "glob", input).await.unwrap()).to_string()
    }

    async fn ls(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.call(&LsTool::new(self.env.clone()), "ls", input).await
    }
}

fn text(out: &ToolOutput) -> &str {
    match out.content.as_slice() {
        [ToolResultContent::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

/// A small project: sources at two depths, a doc, and a test.
fn project() -> Fixture {
    let f = fixture();
    f.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    f.write("src/lib.rs", "pub fn hello() -> &'static str {\n    \"hello\"\n}\n");
    f.write("src/util/strings.rs", "// HELLO in caps\npub fn shout() {}\n");
    f.write("README.md", "# Demo\nSay hello.\n");
    f.write("tests/it.py", "def test_hello():\n    pass\n");
    f
}

// ---------- grep: modes and formats ----------

#[tokio::test]
async fn grep_lists_matching_files_sorted_by_default() {
    let f = project();
    let out = f.grep_text(json!({"pattern": "hello"})).await;
    assert_eq!(out, "README.md\nsrc/lib.rs\ntests/it.py");
}

#[tokio::test]
async fn grep_content_mode_shows_path_line_text() {
    let f = project();
    let out = f.grep_text(json!({"pattern": "hello", "output_mode": "content"})).await;
    assert_eq!(
        out,
        "README.md:2:Say hello.\nsrc/lib.rs:1:pub fn hello() -> &'static str {\nsrc/lib.rs:2:    \"hello\"\ntests/it.py:1:def test_hello():"
    );
    let out = f.grep_text(json!({"pattern": "hello", "output_mode": "content", "-n": false, "path": "src"})).await;
    assert_eq!(out, "src/lib.rs:pub fn hello() -> &'static str {\nsrc/lib.rs:    \"hello\"");
}

#[tokio::test]
async fn grep_count_mode_counts_matching_lines_per_file() {
    let f = project();
    let out = f.grep_text(json!({"pattern": "hello", "output_mode": "count"})).await;
    assert_eq!(out, "README.md:1\nsrc/lib.rs:2\ntests/it.py:1");
}

#[tokio::test]
async fn grep_case_insensitive() {
    let f = project();
    let out = f.grep_text(json!({"pattern": "hello", "-i": true})).await;
    assert_eq!(out, "README.md\nsrc/lib.rs\nsrc/main.rs\nsrc/util/strings.rs\ntests/it.py");
    // Booleans sent as strings are accepted.
    let out = f.grep_text(json!({"pattern": "hello", "-i": "true", "path": "src/util"})).await;
    assert_eq!(out, "src/util/strings.rs");
}

#[tokio::test]
async fn grep_context_lines_and_group_separators() {
    let f = fixture();
    let body: String =
        (1..=12).map(|i| if i == 3 || i == 10 { format!("hit {i}\n") } else { format!("l{i}\n") }).collect();
    f.write("a.txt", &body);
    let after = f.grep_text(json!({"pattern": "hit", "output_mode": "content", "-A": 1})).await;
    assert_eq!(after, "a.txt:3:hit 3\na.txt-4-l4\n--\na.txt:10:hit 10\na.txt-11-l11");
    let before = f.grep_text(json!({"pattern": "hit", "output_mode": "content", "-B": "2"})).await;
    assert_eq!(before, "a.txt-1-l1\na.txt-2-l2\na.txt:3:hit 3\n--\na.txt-8-l8\na.txt-9-l9\na.txt:10:hit 10");
    // -C 3 makes the groups touch (4..6 and 7..9): no separator between them.
    let around = f.grep_text(json!({"pattern": "hit", "output_mode": "content", "-C": 3})).await;
    let lines: Vec<&str> = around.lines().collect();
    assert_eq!(lines.len(), 12);
    assert!(!around.contains("--"), "{around}");
    // -A overrides -C for its side.
    let mixed = f.grep_text(json!({"pattern": "hit 3", "output_mode": "content", "-C": 1, "-A": 0})).await;
    assert_eq!(mixed, "a.txt-2-l2\na.txt:3:hit 3");
}

#[tokio::test]
async fn grep_multiline_matches_span_lines() {
    let f = fixture();
    f.write("s.rs", "struct A {\n    x: u8,\n}\nstruct B;\n");
    let single = f.grep(json!({"pattern": "A \\{\\n    x"})).await.unwrap_err();
    assert!(single.message.contains("multiline: true"), "{}", single.message);
    let out = f.grep_text(json!({"pattern": "struct A \\{.*?\\}", "multiline": true, "output_mode": "content"})).await;
    assert_eq!(out, "s.rs:1:struct A {\ns.rs:2:    x: u8,\ns.rs:3:}");
}

#[tokio::test]
async fn grep_long_lines_are_cut() {
    let f = fixture();
    f.write("long.txt", format!("needle {}\n", "x".repeat(5000)));
    let out = f.grep_text(json!({"pattern": "needle", "output_mode": "content"})).await;
    assert!(out.ends_with(" … [line cut at 2000 chars]"), "{}", &out[out.len() - 60..]);
    assert!(out.len() < 2100, "{}", out.len());
}

// ---------- grep: filters ----------

#[tokio::test]
async fn grep_glob_filter_matches_names_at_any_depth() {
    let f = project();
    let out = f.grep_text(json!({"pattern": "fn", "glob": "*.rs"})).await;
    assert_eq!(out, "src/lib.rs\nsrc/main.rs\nsrc/util/strings.rs");
    let out = f.grep_text(json!({"pattern": "fn", "glob": "util/*.rs", "path": "src"})).await;
    assert_eq!(out, "src/util/strings.rs");
    let out = f.grep_text(json!({"pattern": "fn", "glob": "!main.rs"})).await;
    assert_eq!(out, "src/lib.rs\nsrc/util/strings.rs");
    let out = f.grep_text(json!({"pattern": "hello", "glob": "*.{md,py}"})).await;
    assert_eq!(out, "README.md\ntests/it.py");
    let err = f.grep(json!({"pattern": "x", "glob": "a[b"})).await.unwrap_err();
    assert!(err.message.starts_with("grep: invalid glob `a[b`"), "{}", err.message);
}

#[tokio::test]
async fn grep_type_filter_uses_ripgrep_types() {
    let f = project();
    assert_eq!(f.grep_text(json!({"pattern": "hello", "type": "py"})).await, "tests/it.py");
    assert_eq!(f.grep_text(json!({"pattern": "hello", "type": "rust"})).await, "src/lib.rs");
    let err = f.grep(json!({"pattern": "hello", "type": "rs"})).await.unwrap_err();
    assert!(err.message.contains("unknown file type `rs`"), "{}", err.message);
    assert!(err.message.contains("Did you mean `rust`?"), "{}", err.message);
}

#[tokio::test]
async fn grep_searches_a_single_file_path() {
    let f = project();
    let out = f.grep_text(json!({"pattern": "hello", "path": "src/lib.rs", "output_mode": "count"})).await;
    assert_eq!(out, "src/lib.rs:2");
    let abs = f.root().join("README.md");
    let out = f.grep_text(json!({"pattern": "hello", "path": abs.to_str().unwrap()})).await;
    assert_eq!(out, "README.md");
}

// ---------- grep: ignore rules ----------

#[tokio::test]
async fn grep_respects_gitignore_in_a_repository_and_ignore_files() {
    let f = project();
    std::fs::create_dir(f.root().join(".git")).unwrap();
    f.write(".gitignore", "target/\n*.log\n");
    f.write(".ignore", "generated.rs\n");
    f.write("target/debug/out.rs", "hello\n");
    f.write("run.log", "hello\n");
    f.write("src/generated.rs", "hello\n");
    let out = f.grep_text(json!({"pattern": "hello"})).await;
    assert_eq!(out, "README.md\nsrc/lib.rs\ntests/it.py");
    // Naming an ignored file explicitly searches it, as rg does.
    assert_eq!(f.grep_text(json!({"pattern": "hello", "path": "run.log"})).await, "run.log");
}

#[tokio::test]
async fn grep_skips_hidden_files_unless_a_glob_names_them() {
    let f = project();
    f.write(".env", "hello=1\n");
    f.write(".github/workflows/ci.yml", "hello: world\n");
    f.write(".git/config", "hello\n");
    assert_eq!(f.grep_text(json!({"pattern": "hello"})).await, "README.md\nsrc/lib.rs\ntests/it.py");
    let out = f.grep_text(json!({"pattern": "hello", "glob": ".github/**/*.yml"})).await;
    assert_eq!(out, ".github/workflows/ci.yml");
    // `.git` itself is never searched.
    let out = f.grep_text(json!({"pattern": "hello", "glob": ".*/**"})).await;
    assert_eq!(out, ".github/workflows/ci.yml");
}

#[tokio::test]
async fn grep_skips_binary_files() {
    let f = project();
    f.write("blob.bin", b"hello\0\x01\x02 binary hello\n");
    f.write("src/data.rs", "// hello\n");
    let out = f.grep_text(json!({"pattern": "hello"})).await;
    assert_eq!(out, "README.md\nsrc/data.rs\nsrc/lib.rs\ntests/it.py");
}

// ---------- grep: errors and empty results ----------

#[tokio::test]
async fn grep_invalid_regex_is_an_instructive_error() {
    let f = project();
    let err = f.grep(json!({"pattern": "fn main("})).await.unwrap_err();
    assert!(err.message.contains("invalid regex `fn main(`"), "{}", err.message);
    assert!(err.message.contains("unclosed group"), "{}", err.message);
    assert!(err.message.contains("escape it with a backslash"), "{}", err.message);
}

#[tokio::test]
async fn grep_no_matches_is_a_plain_message() {
    let f = project();
    let out = f.grep(json!({"pattern": "zebra", "path": "src", "glob": "*.rs"})).await.unwrap();
    assert_eq!(
        text(&out),
        "No matches for `zebra` in src (with glob `*.rs`). Gitignored, hidden and binary files are not searched."
    );
    assert_eq!(serde_json::to_value(out.details.unwrap()).unwrap()["total"], 0);
}

#[tokio::test]
async fn grep_missing_path_says_how_to_find_it() {
    let f = project();
    let err = f.grep(json!({"pattern": "x", "path": "nope"})).await.unwrap_err();
    assert!(err.message.starts_with("grep: path not found: nope."), "{}", err.message);
    assert!(err.message.contains("use ls"), "{}", err.message);
}

// ---------- grep: paging and order ----------

fn many_files(f: &Fixture, n: usize) {
    for i in 0..n {
        f.write(&format!("d{}/f{i:04}.txt", i % 7), "match one\nmatch two\n");
    }
}

#[tokio::test]
async fn grep_pages_with_head_limit_and_offset() {
    let f = fixture();
    many_files(&f, 300);
    let all = f.grep_text(json!({"pattern": "match", "head_limit": 0})).await;
    let all: Vec<&str> = all.lines().collect();
    assert_eq!(all.len(), 300);
    let mut sorted = all.clone();
    sorted.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
    assert_eq!(all, sorted);

    let first = f.grep_text(json!({"pattern": "match"})).await;
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 251);
    assert_eq!(lines[..250], all[..250]);
    assert_eq!(
        lines[250],
        "[Showing results 1-250 of 300. Use offset=250 to see more, or narrow the search with path/glob/type.]"
    );
    let rest = f.grep_text(json!({"pattern": "match", "offset": 250})).await;
    let lines: Vec<&str> = rest.lines().collect();
    assert_eq!(lines[..50], all[250..]);
    assert_eq!(lines[50], "[Showing results 251-300 of 300.]");

    // Content mode pages by lines, splitting a file's lines if need be.
    let page = f.grep_text(json!({"pattern": "match", "output_mode": "content", "head_limit": 3, "offset": 1})).await;
    let want_file = all[0];
    let want_next = all[1];
    assert_eq!(
        page,
        format!(
            "{want_file}:2:match two\n{want_next}:1:match one\n{want_next}:2:match two\n\
             [Showing results 2-4 of 600. Use offset=4 to see more, or narrow the search with path/glob/type.]"
        )
    );
    let err = f.grep(json!({"pattern": "match", "offset": 300})).await.unwrap_err();
    assert!(err.message.contains("offset 300 is past the end: there are 300 results"), "{}", err.message);
}

#[tokio::test]
async fn grep_output_is_capped_at_50_kb() {
    let f = fixture();
    for i in 0..40 {
        f.write(&format!("f{i:02}.txt"), format!("hit {}\n", "y".repeat(1900)).repeat(3));
    }
    let out = f.grep(json!({"pattern": "hit", "output_mode": "content", "head_limit": 1000})).await.unwrap();
    let t = text(&out);
    assert!(t.len() <= 50 * 1024 + 200, "{}", t.len());
    let last = t.lines().last().unwrap();
    assert!(last.starts_with("[Showing results 1-"), "{last}");
    assert!(last.contains(" of 120 (50 KB limit). Use offset="), "{last}");
    assert_eq!(serde_json::to_value(out.details.unwrap()).unwrap()["truncated"], true);
}

#[tokio::test]
async fn grep_order_is_deterministic() {
    let f = fixture();
    many_files(&f, 200);
    let a = f.grep_text(json!({"pattern": "two", "output_mode": "content", "head_limit": 0})).await;
    for _ in 0..3 {
        assert_eq!(f.grep_text(json!({"pattern": "two", "output_mode": "content", "head_limit": 0})).await, a);
    }
}

// ---------- glob ----------

#[tokio::test]
async fn glob_lists_newest_first_then_by_path() {
    let f = project();
    f.set_mtime("src/main.rs", 1_000);
    f.set_mtime("src/lib.rs", 3_000);
    f.set_mtime("src/util/strings.rs", 2_000);
    assert_eq!(f.glob_text(json!({"pattern": "*.rs"})).await, "src/lib.rs\nsrc/util/strings.rs\nsrc/main.rs");
    f.set_mtime("src/main.rs", 3_000);
    assert_eq!(f.glob_text(json!({"pattern": "**/*.rs"})).await, "src/lib.rs\nsrc/main.rs\nsrc/util/strings.rs");
}

#[tokio::test]
async fn glob_patterns_with_a_slash_are_relative_to_the_path() {
    let f = project();
    assert_eq!(f.glob_text(json!({"pattern": "src/*.rs"})).await.lines().count(), 2);
    assert_eq!(f.glob_text(json!({"pattern": "util/*.rs", "path": "src"})).await, "src/util/strings.rs");
    assert_eq!(f.glob_text(json!({"pattern": "*.{md,py}"})).await.lines().count(), 2);
    let abs = format!("{}/src/util/*.rs", f.root().display());
    assert_eq!(f.glob_text(json!({"pattern": abs})).await, "src/util/strings.rs");
}

#[tokio::test]
async fn glob_respects_ignore_rules_and_finds_named_hidden_files() {
    let f = project();
    std::fs::create_dir(f.root().join(".git")).unwrap();
    f.write(".gitignore", "target/\n");
    f.write("target/gen.rs", "");
    f.write(".hidden/secret.rs", "");
    f.write(".github/workflows/ci.yml", "");
    f.write(".git/hooks/x.yml", "");
    assert_eq!(f.glob_text(json!({"pattern": "*.rs"})).await.lines().count(), 3);
    assert_eq!(
        f.glob_text(json!({"pattern": "*.yml"})).await,
        "No files match `*.yml` in the workspace root. Gitignored and hidden files are not searched; try a broader pattern (e.g. `**/*name*`) or another path."
    );
    assert_eq!(f.glob_text(json!({"pattern": ".github/**/*.yml"})).await, ".github/workflows/ci.yml");
}

#[tokio::test]
async fn glob_stops_at_1000_with_a_notice() {
    let f = fixture();
    for i in 0..1005 {
        f.write(&format!("many/f{i:04}.txt"), "");
        f.set_mtime(&format!("many/f{i:04}.txt"), 10_000 + i as u64);
    }
    let out = f.glob_text(json!({"pattern": "*.txt"})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1001);
    assert_eq!(lines[0], "many/f1004.txt");
    assert_eq!(lines[999], "many/f0005.txt");
    assert_eq!(
        lines[1000],
        "[Showing the 1000 most recently modified of 1005 matching files. Narrow the search with a more specific pattern or path.]"
    );
}

#[tokio::test]
async fn glob_path_must_be_a_directory() {
    let f = project();
    let err = f.call(&GlobTool::new(f.env.clone()), "glob", json!({"pattern": "*", "path": "README.md"})).await;
    assert!(err.unwrap_err().message.contains("README.md is a file"));
}

// ---------- ls ----------

#[tokio::test]
async fn ls_shows_a_sorted_tree_with_directories_marked() {
    let f = project();
    let out = f.ls(json!({})).await.unwrap();
    assert_eq!(
        text(&out),
        "./\n  README.md\n  src/\n    lib.rs\n    main.rs\n    util/\n      strings.rs\n  tests/\n    it.py"
    );
    let out = f.ls(json!({"path": "src"})).await.unwrap();
    assert_eq!(text(&out), "src/\n  lib.rs\n  main.rs\n  util/\n    strings.rs");
}

#[tokio::test]
async fn ls_leaves_out_ignored_hidden_and_ignore_globs() {
    let f = project();
    std::fs::create_dir(f.root().join(".git")).unwrap();
    f.write(".gitignore", "target/\n");
    f.write("target/x.o", "");
    f.write(".env", "");
    f.write("debug.log", "");
    let out = f.ls(json!({"ignore": ["*.log", "util"]})).await.unwrap();
    assert_eq!(text(&out), "./\n  README.md\n  src/\n    lib.rs\n    main.rs\n  tests/\n    it.py");
    // One glob sent as a string is accepted.
    let out = f.ls(json!({"path": "src", "ignore": "*.rs"})).await.unwrap();
    assert_eq!(text(&out), "src/\n  util/");
}

#[tokio::test]
async fn ls_is_bounded_breadth_first() {
    let f = fixture();
    f.write("top.txt", "");
    for i in 0..1200 {
        f.write(&format!("big/f{i:04}"), "");
    }
    f.write("small/a", "");
    let out = f.ls(json!({})).await.unwrap();
    let t = text(&out);
    let lines: Vec<&str> = t.lines().collect();
    // Header + 1000 entries + two "more" lines + the notice. The three
    // top-level entries come first; depth 2 fills the rest in tree order.
    assert_eq!(lines.len(), 1004, "{}", &t[t.len() - 300..]);
    assert_eq!(lines[1..3], ["  big/", "    f0000"]);
    assert_eq!(lines[998], "    f0996");
    assert_eq!(lines[999..1003], ["    … 203 more", "  small/", "    … 1 more", "  top.txt"]);
    assert!(lines[1003].starts_with("[Listing cut at 1000 of 1204 entries found down to depth 2;"), "{}", lines[1003]);
    assert_eq!(serde_json::to_value(out.details.unwrap()).unwrap()["truncated"], true);
}

#[tokio::test]
async fn ls_errors_name_the_problem() {
    let f = project();
    let err = f.ls(json!({"path": "README.md"})).await.unwrap_err();
    assert_eq!(err.message, "ls: README.md is a file, not a directory. Read it with the read tool.");
    let err = f.ls(json!({"path": "missing"})).await.unwrap_err();
    assert!(err.message.starts_with("ls: path not found: missing."), "{}", err.message);
    std::fs::create_dir(f.root().join("empty")).unwrap();
    let out = f.ls(json!({"path": "empty"})).await.unwrap();
    assert_eq!(text(&out), "empty/ (no entries; hidden and gitignored entries are not listed)");
}

// ---------- registration ----------

#[test]
fn search_tools_are_registered_after_bash() {
    let out = tempfile::tempdir().unwrap();
    let tools = tern_tools::builtin_tools(Arc::new(ToolEnv::new(out.path(), out.path())));
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    let bash = names.iter().position(|n| *n == "bash").unwrap();
    assert_eq!(names[bash + 1..bash + 4], ["grep", "glob", "ls"]);
    for t in &tools[bash + 1..bash + 4] {
        let size = serde_json::to_string(&t.definition).unwrap().len();
        assert!(size < 2048, "{} definition is {size} bytes", t.name());
        assert!(t.definition.description.len() <= 1200, "{} description too long", t.name());
    }
    let all: usize = tools.iter().map(|t| serde_json::to_string(&t.definition).unwrap().len()).sum();
    // Eleven tools (the eight core ones, task_output, task_stop and task_append): about 1 KB each at most.
    assert_eq!(tools.len(), 11);
    assert!(all <= 12 * 1024, "all built-in definitions take {all} bytes of JSON");
}
