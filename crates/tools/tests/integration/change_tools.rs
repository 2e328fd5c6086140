//! write, edit and todo_write, called as the loop calls them.

use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_agent_loop::{EventSink, NoHooks, RuntimeTool, ToolContext, ToolError, ToolOutput, execute_batch};
use tern_protocol::{ToolCall, ToolResultContent};
use tern_tools::ToolEnv;
use tokio_util::sync::CancellationToken;

struct Fixture {
    ws: tempfile::TempDir,
    env: Arc<ToolEnv>,
    tools: Vec<RuntimeTool>,
}

impl Fixture {
    fn new() -> Self {
        let ws = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        let env = Arc::new(ToolEnv::new(root.clone(), root.join(".tool-outputs")));
        let tools = tern_tools::builtin_tools(env.clone());
        Self { ws, env, tools }
    }

    fn root(&self) -> &Path {
        self.env.workspace.as_path()
    }

    fn put(&self, rel: &str, bytes: &[u8]) {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root().join(rel)).unwrap()
    }

    async fn call(&self, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.tools.iter().find(|t| t.name() == name).unwrap();
        let (input, _) = tool.understand(input);
        tool.validate(&input).map_err(|e| ToolError::new(e.to_string()))?;
        let ctx = ToolContext { call_id: "call_1".into(), tool_name: name.into(), confinement: None, judged: None };
        tool.implementation.execute(ctx, input, CancellationToken::new(), Arc::new(|_| {})).await
    }

    async fn read(&self, rel: &str) {
        self.call("read", json!({"path": rel})).await.unwrap();
    }
}

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.clone(),
            ToolResultContent::Image { .. } => String::new(),
        })
        .collect()
}

#[tokio::test]
async fn write_creates_parents_and_reports_what_it_wrote() {
    let f = Fixture::new();
    let out = f.call("write", json!({"path": "a/b/new.txt", "content": "one\ntwo\n"})).await.unwrap();
    assert_eq!(text(&out), "Created a/b/new.txt (2 lines, 8 B).");
    assert_eq!(f.get("a/b/new.txt"), b"one\ntwo\n");
    assert_eq!(serde_json::to_value(out.details.unwrap()).unwrap()["created"], true);
}

#[tokio::test]
async fn write_needs_a_fresh_read_to_overwrite_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    f.put("run.sh", b"echo old\n");
    std::fs::set_permissions(f.root().join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let err = f.call("write", json!({"path": "run.sh", "content": "echo new\n"})).await.unwrap_err();
    assert!(err.message.starts_with("Read run.sh before you overwrite it"), "{}", err.message);
    assert_eq!(f.get("run.sh"), b"echo old\n");

    f.read("run.sh").await;
    let out = f.call("write", json!({"path": "run.sh", "content": "echo new\necho more\n"})).await.unwrap();
    assert!(
        text(&out).starts_with("Overwrote run.sh (2 lines, 19 B; was 1 line, 9 B; +2 −1 lines)."),
        "{}",
        text(&out)
    );
    assert_eq!(f.get("run.sh"), b"echo new\necho more\n");
    let mode = std::fs::metadata(f.root().join("run.sh")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
    // Our own write counts as seen: a second overwrite needs no new read.
    f.call("write", json!({"path": "run.sh", "content": "x\n"})).await.unwrap();
}

#[tokio::test]
async fn write_refuses_a_directory() {
    let f = Fixture::new();
    std::fs::create_dir(f.root().join("dir")).unwrap();
    let err = f.call("write", json!({"path": "dir", "content": "x"})).await.unwrap_err();
    assert!(err.message.contains("is a directory"), "{}", err.message);
}

#[tokio::test]
async fn edit_replaces_once_and_shows_a_diff() {
    let f = Fixture::new();
    f.put("src/lib.rs", b"fn a() {}\nfn b() {}\n");
    f.read("src/lib.rs").await;
    let out = f
        .call("edit", json!({"path": "src/lib.rs", "old_string": "fn b() {}", "new_string": "fn b() -> u8 { 1 }"}))
        .await
        .unwrap();
    assert_eq!(f.get("src/lib.rs"), b"fn a() {}\nfn b() -> u8 { 1 }\n");
    assert_eq!(
        text(&out),
        "Edited src/lib.rs: 1 replacement (+1 −1 lines).\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn b() -> u8 { 1 }\n"
    );
    let d = serde_json::to_value(out.details.unwrap()).unwrap();
    assert_eq!(d["hunks"][0]["lines"][2], json!({"tag": "+", "old": null, "new": 2, "text": "fn b() -> u8 { 1 }"}));
}

#[tokio::test]
async fn edit_keeps_crlf_and_bom() {
    let f = Fixture::new();
    f.put("win.txt", b"\xEF\xBB\xBFfirst\r\nsecond\r\nthird\r\n");
    f.read("win.txt").await;
    f.call("edit", json!({"path": "win.txt", "old_string": "second\nthird", "new_string": "2nd\n3rd\nfourth"}))
        .await
        .unwrap();
    assert_eq!(f.get("win.txt"), b"\xEF\xBB\xBFfirst\r\n2nd\r\n3rd\r\nfourth\r\n");
}

#[tokio::test]
async fn edit_refuses_a_file_changed_since_it_was_read() {
    let f = Fixture::new();
    f.put("a.txt", b"hello\n");
    f.read("a.txt").await;
    f.put("a.txt", b"hello, changed elsewhere\n");
    let err = f.call("edit", json!({"path": "a.txt", "old_string": "hello", "new_string": "bye"})).await.unwrap_err();
    assert!(err.message.contains("changed on disk since you read it"), "{}", err.message);
    assert!(err.message.contains("from 6 B to 25 B"), "{}", err.message);
    assert_eq!(f.get("a.txt"), b"hello, changed elsewhere\n");
    // Sizes that round alike are given in bytes, not as "8.8 MB to 8.8 MB".
    let big = vec![b'x'; 9_227_468];
    f.put("big.txt", &big);
    f.read("big.txt").await;
    f.put("big.txt", &[big.as_slice(), b"yy"].concat());
    let err = f.call("edit", json!({"path": "big.txt", "old_string": "x", "new_string": "z"})).await.unwrap_err();
    assert!(err.message.contains("from 9227468 to 9227470 bytes"), "{}", err.message);
    let err =
        f.call("edit", json!({"path": "never-read.txt", "old_string": "a", "new_string": "b"})).await.unwrap_err();
    assert!(err.message.contains("does not exist"), "{}", err.message);
    f.put("unread.txt", b"a\n");
    let err = f.call("edit", json!({"path": "unread.txt", "old_string": "a", "new_string": "b"})).await.unwrap_err();
    assert!(err.message.starts_with("Read unread.txt before you edit it"), "{}", err.message);
}

#[tokio::test]
async fn replace_all_and_ambiguity() {
    let f = Fixture::new();
    f.put("c.txt", b"x = 1\ny = 2\nx = 1\n");
    f.read("c.txt").await;
    let err = f.call("edit", json!({"path": "c.txt", "old_string": "x = 1", "new_string": "x = 3"})).await.unwrap_err();
    assert!(err.message.contains("occurs 2 times in c.txt (at lines 1, 3)"), "{}", err.message);
    let out = f
        .call("edit", json!({"path": "c.txt", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}))
        .await
        .unwrap();
    assert!(text(&out).starts_with("Edited c.txt: 2 replacements"), "{}", text(&out));
    assert_eq!(f.get("c.txt"), b"x = 3\ny = 2\nx = 3\n");
}

#[tokio::test]
async fn multi_edit_is_all_or_nothing() {
    let f = Fixture::new();
    f.put("m.txt", b"alpha\nbeta\ngamma\n");
    f.read("m.txt").await;
    let err = f
        .call(
            "edit",
            json!({"path": "m.txt", "edits": [
                {"old_string": "alpha", "new_string": "ALPHA"},
                {"old_string": "no such text", "new_string": "x"}
            ]}),
        )
        .await
        .unwrap_err();
    assert!(err.message.starts_with("Edit 2 of 2 failed, so no change was written to m.txt"), "{}", err.message);
    assert_eq!(f.get("m.txt"), b"alpha\nbeta\ngamma\n");
    let out = f
        .call(
            "edit",
            json!({"path": "m.txt", "edits": [
                {"old_string": "alpha", "new_string": "ALPHA"},
                {"old_string": "ALPHA\nbeta", "new_string": "ALPHA\nBETA"}
            ]}),
        )
        .await
        .unwrap();
    assert!(text(&out).starts_with("Edited m.txt: 2 replacements"), "{}", text(&out));
    assert_eq!(f.get("m.txt"), b"ALPHA\nBETA\ngamma\n");
}

#[tokio::test]
async fn not_found_lists_the_nearest_lines() {
    let f = Fixture::new();
    f.put("n.rs", b"use std::io;\n\nfn parse_config(path: &str) -> Config {\n    todo!()\n}\n");
    f.read("n.rs").await;
    let err = f
        .call(
            "edit",
            json!({"path": "n.rs", "old_string": "fn parse_configs(path: &Path) -> Config {", "new_string": "x"}),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("old_string was not found in n.rs"), "{}", err.message);
    assert!(err.message.contains("at line 3:\n     3\tfn parse_config(path: &str) -> Config {"), "{}", err.message);
}

#[tokio::test]
async fn whitespace_tolerant_fallback_is_reported() {
    let f = Fixture::new();
    f.put("w.py", b"def f():\n\treturn 1   \n");
    f.read("w.py").await;
    let out = f
        .call("edit", json!({"path": "w.py", "old_string": "    return 1", "new_string": "    return 2"}))
        .await
        .unwrap();
    assert!(text(&out).contains("a unique match differing only in whitespace or quotes was used"), "{}", text(&out));
    assert_eq!(f.get("w.py"), b"def f():\n\treturn 2\n");
}

#[tokio::test]
async fn non_utf8_files_are_refused() {
    let f = Fixture::new();
    f.put("latin1.txt", b"caf\xE9\n");
    f.read("latin1.txt").await;
    let err =
        f.call("edit", json!({"path": "latin1.txt", "old_string": "caf", "new_string": "bar"})).await.unwrap_err();
    assert!(err.message.contains("is not UTF-8 text"), "{}", err.message);
    assert_eq!(f.get("latin1.txt"), b"caf\xE9\n");
}

#[tokio::test]
async fn a_symlink_to_outside_the_workspace_is_reported() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(outside.path()).unwrap().join("target.txt");
    std::fs::write(&real, "outside\n").unwrap();
    std::os::unix::fs::symlink(&real, f.root().join("link.txt")).unwrap();
    f.read("link.txt").await;
    let out =
        f.call("edit", json!({"path": "link.txt", "old_string": "outside", "new_string": "changed"})).await.unwrap();
    let t = text(&out);
    assert!(t.contains("link.txt is a symlink"), "{t}");
    assert!(t.contains(&format!("{} is outside the workspace", real.display())), "{t}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "changed\n");
    assert!(
        std::fs::symlink_metadata(f.root().join("link.txt")).unwrap().file_type().is_symlink(),
        "the link stays a link"
    );
}

#[tokio::test]
async fn two_edits_of_one_file_in_one_batch_are_both_applied() {
    let f = Fixture::new();
    f.put("b.txt", b"one\ntwo\nthree\n");
    f.read("b.txt").await;
    let calls = vec![
        ToolCall {
            id: "1".into(),
            name: "edit".into(),
            input: json!({"path": "b.txt", "old_string": "one", "new_string": "1"}),
        },
        ToolCall {
            id: "2".into(),
            name: "edit".into(),
            input: json!({"path": "b.txt", "old_string": "three", "new_string": "3"}),
        },
    ];
    let events: EventSink = Arc::new(|_| {});
    let results = execute_batch(&f.tools, &calls, &NoHooks, &events, &CancellationToken::new()).await;
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    assert_eq!(f.get("b.txt"), b"1\ntwo\n3\n");
}

#[tokio::test]
async fn todo_write_replaces_the_list_and_validates() {
    let f = Fixture::new();
    let out = f
        .call(
            "todo_write",
            json!({"todos": [
                {"content": "Read the code", "status": "completed", "active_form": "Reading the code"},
                {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(text(&out), "Todo list updated: 1 done, 1 in progress, 0 pending.\n[x] Read the code\n[>] Fix the bug");
    assert_eq!(serde_json::to_value(out.details.unwrap()).unwrap()["todos"][1]["active_form"], "Fixing the bug");
    let err = f
        .call(
            "todo_write",
            json!({"todos": [
                {"content": "a", "status": "in_progress", "active_form": "A"},
                {"content": "b", "status": "in_progress", "active_form": "B"}
            ]}),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("keep exactly one item in_progress"), "{}", err.message);
    let err = f
        .call("todo_write", json!({"todos": [{"content": "a", "status": "doing", "active_form": "A"}]}))
        .await
        .unwrap_err();
    assert!(err.message.contains("doing"), "{}", err.message);
    drop(f.ws);
}

#[tokio::test]
async fn a_long_diff_of_multibyte_text_is_cut_between_characters() {
    // The unified diff is over the cap, and with every byte offset around
    // the cut tried, one of them lands inside a character.
    for pad in 0..4 {
        let f = Fixture::new();
        let old: String = (0..600).map(|i| format!("{}行{i}\n", "x".repeat(pad))).collect();
        f.put("wide.txt", old.as_bytes());
        f.read("wide.txt").await;
        let new = old.replace('行', "列");
        let out = f
            .call("edit", json!({"path": "wide.txt", "old_string": old, "new_string": new}))
            .await
            .unwrap_or_else(|e| panic!("pad {pad}: {}", e.message));
        assert!(text(&out).contains("read the file to see the rest"), "pad {pad}: {}", text(&out));
        assert_eq!(String::from_utf8(f.get("wide.txt")).unwrap(), new);
    }
}

#[test]
fn the_permission_preview_is_the_diff_the_edit_will_make() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=60).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), &lines).unwrap();
    let input = serde_json::json!({"path": "f.txt", "old_string": "line 41\n", "new_string": "LINE 41\n"});
    let judged =
        tern_protocol::JudgedPath { real: std::fs::canonicalize(dir.path()).unwrap().join("f.txt"), identity: None };
    let diff = tern_tools::edit::change_preview(&judged, "edit", &input).unwrap();
    assert!(diff.contains("@@ -38,7 +38,7 @@") && diff.contains("-line 41") && diff.contains("+LINE 41"), "{diff}");
    // An edit that would fail (no match) has no preview; the file is untouched either way.
    let bad = serde_json::json!({"path": "f.txt", "old_string": "nope", "new_string": "x"});
    assert!(tern_tools::edit::change_preview(&judged, "edit", &bad).is_none());
    // A link swapped in for the judged file gives no preview (it would show another file).
    let other = dir.path().join("other.txt");
    std::fs::write(&other, "SECRET\n").unwrap();
    std::fs::rename(dir.path().join("f.txt"), dir.path().join("f-moved.txt")).unwrap();
    std::os::unix::fs::symlink(&other, dir.path().join("f.txt")).unwrap();
    let overwrite = serde_json::json!({"path": "f.txt", "content": "new\n"});
    assert!(tern_tools::edit::change_preview(&judged, "write", &overwrite).is_none());
    std::fs::remove_file(dir.path().join("f.txt")).unwrap();
    std::fs::rename(dir.path().join("f-moved.txt"), dir.path().join("f.txt")).unwrap();
    assert!(tern_tools::edit::change_preview(&judged, "write", &overwrite).unwrap().contains("-line 1"));
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), lines);
}

#[tokio::test]
async fn with_no_policy_a_name_means_the_file_the_policy_would_have_judged() {
    // `e` links to sub/deep: `e/../x.txt` is sub/x.txt to the kernel (and to the policy), not
    // the x.txt a lexical fold of the name gives.
    let f = Fixture::new();
    std::fs::create_dir_all(f.root().join("sub/deep")).unwrap();
    std::os::unix::fs::symlink(f.root().join("sub/deep"), f.root().join("e")).unwrap();
    f.call("write", json!({"path": "e/../x.txt", "content": "here\n"})).await.unwrap();
    assert_eq!(f.get("sub/x.txt"), b"here\n");
    assert!(!f.root().join("x.txt").exists());
    let judged = tern_protocol::paths::resolve("e/../x.txt", f.root(), None);
    assert_eq!(judged, f.root().join("sub/x.txt"));
}
