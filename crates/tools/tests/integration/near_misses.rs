//! Near-misses small models send, run through the loop's batch runner (as
//! the loop runs them): what is accepted with a note, what is refused, and
//! the files each leaves.

use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_agent_loop::{EventSink, NoHooks, RuntimeTool, ToolCallResult, execute_batch};
use tern_protocol::{ToolCall, ToolResultContent};
use tern_tools::ToolEnv;
use tokio_util::sync::CancellationToken;

struct Fixture {
    _ws: tempfile::TempDir,
    root: std::path::PathBuf,
    tools: Vec<RuntimeTool>,
}

impl Fixture {
    /// A workspace at `<tmp>/work/proj` with `src/main.rs`.
    fn new() -> Self {
        let ws = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap().join("work/proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
        let env = Arc::new(ToolEnv::new(root.clone(), root.join(".tool-outputs")));
        let tools = tern_tools::builtin_tools(env);
        Self { _ws: ws, root, tools }
    }

    /// The workspace path of `rel` without its leading `/`, as small models write it.
    fn lost_slash(&self, rel: &str) -> String {
        format!("{}/{rel}", self.root.display()).trim_start_matches('/').to_string()
    }

    fn get(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    async fn call(&self, name: &str, input: Value) -> ToolCallResult {
        let calls = [ToolCall { id: "c1".into(), name: name.into(), input }];
        let events: EventSink = Arc::new(|_| {});
        execute_batch(&self.tools, &calls, &NoHooks, &events, &CancellationToken::new()).await.remove(0)
    }
}

/// The result's text blocks, one per line.
fn text(r: &ToolCallResult) -> String {
    ToolResultContent::joined_text(&r.content)
}

#[tokio::test]
async fn read_takes_offset_zero_null_limit_and_numbers_as_strings_and_says_so() {
    let f = Fixture::new();
    let r = f.call("read", json!({"path": "src/main.rs", "offset": 0, "limit": "2"})).await;
    assert!(!r.is_error, "{}", text(&r));
    assert_eq!(
        text(&r),
        "     1\tfn main() {\n     2\t    println!(\"hi\");\n[Showing lines 1-2 of 3. Use offset=3 to continue.]\n\
         [Note: understood `limit: \"2\"` as 2; `offset: 0` as the first line.]"
    );
    let r = f.call("read", json!({"path": "src/main.rs", "limit": null})).await;
    assert!(!r.is_error, "{}", text(&r));
    assert!(text(&r).ends_with("     3\t}\n[Note: understood `limit: null` as not given.]"), "{}", text(&r));
}

#[tokio::test]
async fn a_path_without_its_leading_slash_reads_and_edits_the_file_it_names() {
    let f = Fixture::new();
    let named = f.lost_slash("src/main.rs");
    let meant = f.root.join("src/main.rs").display().to_string();
    let r = f.call("read", json!({"path": named})).await;
    assert!(!r.is_error, "{}", text(&r));
    assert!(text(&r).ends_with(&format!("[Note: understood `path: \"{named}\"` as {meant}.]")), "{}", text(&r));
    let r = f.call("edit", json!({"path": named, "old_string": "\"hi\"", "new_string": "\"hello\""})).await;
    assert!(!r.is_error, "{}", text(&r));
    assert!(text(&r).starts_with("Edited src/main.rs: 1 replacement"), "{}", text(&r));
    assert_eq!(f.get("src/main.rs"), "fn main() {\n    println!(\"hello\");\n}\n");
    // The workspace's own folder name repeated: the same reading.
    let r = f.call("read", json!({"path": "proj/src/main.rs"})).await;
    assert!(!r.is_error, "{}", text(&r));
    // A folder for ls, grep and glob: the same.
    let src = f.lost_slash("src");
    for (tool, input) in [
        ("ls", json!({"path": src})),
        ("grep", json!({"pattern": "hello", "path": src})),
        ("glob", json!({"pattern": "*.rs", "path": src})),
    ] {
        let r = f.call(tool, input).await;
        assert!(!r.is_error, "{tool}: {}", text(&r));
        assert!(text(&r).contains("main.rs"), "{tool}: {}", text(&r));
        assert!(text(&r).ends_with(&format!(" as {}.]", f.root.join("src").display())), "{tool}: {}", text(&r));
    }
}

#[tokio::test]
async fn edit_takes_one_top_level_change_beside_an_empty_list() {
    let f = Fixture::new();
    assert!(!f.call("read", json!({"path": "src/main.rs"})).await.is_error);
    let r = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "edits": [], "old_string": "hi", "new_string": "bye", "replace_all": "true"}),
        )
        .await;
    assert!(!r.is_error, "{}", text(&r));
    assert!(
        text(&r).ends_with(
            "[Note: understood `replace_all: \"true\"` as true; `edits: []` beside `old_string`/`new_string` as that one edit.]"
        ),
        "{}",
        text(&r)
    );
    assert_eq!(f.get("src/main.rs"), "fn main() {\n    println!(\"bye\");\n}\n");
}

/// Seen from Qwen2.5-Coder 0.5B in `cargo xtask eval`: the one change given
/// twice, in `edits` and at the top level.
#[tokio::test]
async fn edit_takes_the_same_change_given_in_the_list_and_at_the_top_level() {
    let f = Fixture::new();
    assert!(!f.call("read", json!({"path": "src/main.rs"})).await.is_error);
    let r = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "old_string": "hi", "new_string": "bye", "replace_all": false,
                   "edits": [{"old_string": "hi", "new_string": "bye", "replace_all": false}]}),
        )
        .await;
    assert!(!r.is_error, "{}", text(&r));
    assert!(
        text(&r).ends_with("[Note: understood the same change in `edits` and at the top level as that one edit.]"),
        "{}",
        text(&r)
    );
    assert_eq!(f.get("src/main.rs"), "fn main() {\n    println!(\"bye\");\n}\n");
    // The same pair with another `replace_all` is two different changes: refused.
    let r = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "old_string": "bye", "new_string": "hi", "replace_all": true,
                   "edits": [{"old_string": "bye", "new_string": "hi"}]}),
        )
        .await;
    assert!(r.is_error, "{}", text(&r));
}

#[tokio::test]
async fn edit_given_both_a_list_and_a_top_level_change_is_refused() {
    let f = Fixture::new();
    assert!(!f.call("read", json!({"path": "src/main.rs"})).await.is_error);
    let r = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "edits": [{"old_string": "main", "new_string": "start"}],
                   "old_string": "hi", "new_string": "bye"}),
        )
        .await;
    assert!(r.is_error);
    assert!(text(&r).starts_with("edit: both `edits` and a top-level `old_string`/`new_string`"), "{}", text(&r));
    assert_eq!(f.get("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n");
}

#[tokio::test]
async fn write_asks_which_file_when_the_leading_slash_form_exists() {
    let f = Fixture::new();
    let named = f.lost_slash("src/main.rs");
    let r = f.call("write", json!({"path": named, "content": "x"})).await;
    assert!(r.is_error);
    let meant = f.root.join("src/main.rs");
    let as_written = f.root.join(&named);
    assert_eq!(
        text(&r),
        format!(
            "write: `{named}` is relative, so it would create {} (and its folders), but {} exists. Which do you mean? \
             Nothing was written. Call write again with the absolute path: {} for that file, or {} for a new one.",
            as_written.display(),
            meant.display(),
            meant.display(),
            as_written.display()
        )
    );
    assert_eq!(f.get("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n");
    assert!(!f.root.join("work").exists());
    // A new file whose folder exists only in the leading-`/` form: the same question.
    let r = f.call("write", json!({"path": f.lost_slash("src/new.rs"), "content": "x"})).await;
    assert!(text(&r).contains("but the folder of"), "{}", text(&r));
    assert!(!Path::new(&f.root.join("src/new.rs")).exists());
    // A plain new file is written.
    let r = f.call("write", json!({"path": "src/new.rs", "content": "x"})).await;
    assert!(!r.is_error, "{}", text(&r));
}

#[tokio::test]
async fn a_missing_file_names_the_nearest_existing_one() {
    let f = Fixture::new();
    let r = f.call("read", json!({"path": "src/mian.rs"})).await;
    assert!(r.is_error);
    assert_eq!(text(&r), "File not found: src/mian.rs. Did you mean src/main.rs?");
    let r = f.call("edit", json!({"path": "lib/main.rs", "old_string": "a", "new_string": "b"})).await;
    assert!(r.is_error);
    assert_eq!(text(&r), "No such file: lib/main.rs. Did you mean src/main.rs? (To create a new file, use write.)");
    // Nothing near: the plain message.
    let r = f.call("edit", json!({"path": "zzz/qqq.txt", "old_string": "a", "new_string": "b"})).await;
    assert_eq!(text(&r), "zzz/qqq.txt does not exist. To create a file, use write.");
}
