//! End to end: the model reads, searches and edits through the real binary,
//! and the files on disk are right.

use crate::common;

use common::{BOTH, Harness, Wire, write};
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test]
async fn the_model_reads_greps_edits_and_the_file_on_disk_is_right() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            &json!({"turns": [
                {"text": "Let me find it.", "tool_calls": [
                    {"name": "grep", "arguments": {"pattern": "fn greet", "output_mode": "content"}},
                    {"name": "read", "arguments": {"path": "src/lib.rs"}}
                ]},
                {"tool_calls": [{"name": "edit", "arguments": {
                    "path": "src/lib.rs", "old_string": "\"Hello\"", "new_string": "\"Hello, world\""}}]},
                {"tool_calls": [{"name": "write", "arguments": {"path": "notes/CHANGES.md", "content": "- greet says world\n"}}]},
                {"text": "Done: greet now says hello to the world."}
            ]})
            .to_string(),
        )
        .await;
        write(&h.path("src/lib.rs"), "pub fn greet() -> &'static str {\n    \"Hello\"\n}\n");
        let out = h.run(&["-p", "make greet say hello world", "--output-format", "tern-events"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} {}", out.stderr);
        assert_eq!(
            std::fs::read_to_string(h.path("src/lib.rs")).unwrap(),
            "pub fn greet() -> &'static str {\n    \"Hello, world\"\n}\n"
        );
        assert_eq!(std::fs::read_to_string(h.path("notes/CHANGES.md")).unwrap(), "- greet says world\n");
        let bodies = h.bodies();
        let first = h.tool_results(&bodies[1]);
        assert_eq!(first[0], ("src/lib.rs:1:pub fn greet() -> &'static str {".to_string(), false), "{wire:?}");
        let edit = h.tool_results(&bodies[2]).pop().unwrap();
        assert!(!edit.1, "{wire:?}: {}", edit.0);
        assert!(edit.0.contains("-    \"Hello\"\n+    \"Hello, world\""), "{wire:?}: {}", edit.0);
        let ends = out.events_of_type("tool_execution_end");
        let edit_end = ends.iter().find(|e| e["name"] == "edit").unwrap();
        assert_eq!(edit_end["details"]["replacements"], 1);
    }
}

#[tokio::test]
async fn an_edit_without_a_read_is_refused_and_the_model_recovers() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "edit", "arguments": {"path": "a.txt", "old_string": "x", "new_string": "y"}}]},
            {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "a.txt", "old_string": "x", "new_string": "y"}}]},
            {"text": "ok"}
        ]})
        .to_string(),
    )
    .await;
    write(&h.path("a.txt"), "x\n");
    let out = h.run(&["-p", "change x to y"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let refused = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(refused.1 && refused.0.starts_with("Read a.txt before you edit it"), "{refused:?}");
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "y\n");
}

#[tokio::test]
async fn todo_write_emits_a_todo_update_event() {
    let h = Harness::new(
        Wire::OpenAi,
        &json!({"turns": [
            {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [
                {"content": "Write the test", "status": "in_progress", "active_form": "Writing the test"},
                {"content": "Fix the bug", "status": "pending", "active_form": "Fixing the bug"}
            ]}}]},
            {"text": "planned"}
        ]})
        .to_string(),
    )
    .await;
    let out = h.run(&["-p", "plan it", "--output-format", "tern-events"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let updates = out.events_of_type("todo_update");
    assert_eq!(updates.len(), 1);
    assert_eq!(
        updates[0]["todos"],
        json!([
            {"content": "Write the test", "status": "in_progress", "active_form": "Writing the test"},
            {"content": "Fix the bug", "status": "pending", "active_form": "Fixing the bug"}
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_from_four_processes_lose_no_update() {
    // Four runs in one folder each read the same file, then edit their own line of it.
    let shared = tempfile::tempdir().unwrap();
    let data = shared.path().join("data.txt");
    let dir = shared.path().display().to_string();
    for round in 0..5 {
        let original: String = (0..4).map(|k| format!("line {k}: old {round}\n")).collect();
        std::fs::write(&data, &original).unwrap();
        let mut runs = Vec::new();
        let mut harnesses = Vec::new();
        for k in 0..4 {
            let script = json!({"turns": [
                {"tool_calls": [{"name": "read", "arguments": {"path": "data.txt"}}]},
                {"tool_calls": [{"name": "edit", "arguments": {
                    "path": "data.txt", "old_string": format!("line {k}: old {round}"), "new_string": format!("line {k}: NEW {round}")}}]},
                {"text": "done"}]});
            let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
            runs.push(h.command(&["-p", "edit your line", "--cwd", &dir]).output());
            harnesses.push(h);
        }
        let outs = futures::future::join_all(runs).await;
        let text = std::fs::read_to_string(&data).unwrap();
        for (k, (h, out)) in harnesses.iter().zip(outs).enumerate() {
            let out = out.unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            let results = h.tool_results(&h.bodies()[2]);
            let (result, failed) = results.last().cloned().unwrap();
            let landed = text.contains(&format!("line {k}: NEW {round}"));
            // Each edit reported done is in the file; each one that is not was told why: the
            // edit found the file changed since the read, or the read found it replaced after
            // its permission check (another run's edit landed in between).
            assert_eq!(!failed, landed, "round {round}, run {k}: {result}\n{text}");
            if failed {
                assert!(results.iter().any(|(r, _)| r.contains("changed")), "{results:?}");
            }
        }
        let stray: Vec<_> = std::fs::read_dir(shared.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "data.txt")
            .collect();
        assert!(stray.is_empty(), "no temp files left: {stray:?}");
    }
}

#[tokio::test]
async fn temp_files_a_killed_tern_left_are_removed_at_the_next_start() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [{"tool_calls": [{"name": "write", "arguments": {"path": "new.txt", "content": "hi\n"}}]}, {"text": "ok"}]}).to_string(),
    )
    .await;
    let pending = h.home.path().join("pending-writes");
    // A process that is gone now, with a temp file of its own in the workspace.
    let dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    let mut dead = dead;
    dead.wait().unwrap();
    let leftover = h.path(&format!(".data.txt.tern-{pid}-0badf00d.tmp"));
    std::fs::write(&leftover, "half a write").unwrap();
    let unrelated = h.path(".keep.tmp");
    std::fs::write(&unrelated, "not tern's").unwrap();
    std::fs::create_dir_all(&pending).unwrap();
    // A list nobody holds locked: its process is gone. Entries end with a NUL byte.
    std::fs::write(
        pending.join(format!("{pid}-0badf00d")),
        format!("{}\0{}\0", leftover.display(), unrelated.display()),
    )
    .unwrap();
    let out = h.run(&["-p", "write it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!leftover.exists(), "the dead process's temp file is removed");
    assert!(unrelated.exists(), "only files named as tern's temp files are touched");
    assert!(out.stderr.contains("temp file(s) a stopped tern left behind"), "{}", out.stderr);
    assert!(!pending.join(format!("{pid}-0badf00d")).exists());
    // This run listed its own temp file while it wrote.
    let lists: Vec<String> =
        std::fs::read_dir(&pending).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    assert!(lists.iter().any(|l| l.contains(".new.txt.tern-")), "{lists:?}");
}

#[tokio::test]
async fn a_file_name_that_is_not_utf8_is_shown_so_it_can_be_read() {
    use std::os::unix::ffi::OsStrExt;
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "ls", "arguments": {}}]},
            {"tool_calls": [{"name": "read", "arguments": {"path": "caf\\xe9.txt"}}]},
            {"text": "ok"}]})
        .to_string(),
    )
    .await;
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(h.workspace.path().join(name), "latin-1 named file\n").unwrap();
    let out = h.run(&["-p", "look"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let listing = h.tool_results(&h.bodies()[1]).pop().unwrap().0;
    assert!(listing.contains("caf\\xe9.txt") && !listing.contains('\u{fffd}'), "{listing}");
    let (read, failed) = h.tool_results(&h.bodies()[2]).pop().unwrap();
    assert!(!failed && read.contains("latin-1 named file"), "{read}");
}

#[tokio::test]
async fn near_misses_of_a_small_model_are_understood_and_ambiguous_ones_refused() {
    for wire in BOTH {
        let mut h = Harness::new(wire, r#"{"turns": [{"text": "unused"}]}"#).await;
        write(&h.path("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n");
        // The workspace path without its leading `/`, as small models write it.
        let root = std::fs::canonicalize(h.workspace.path()).unwrap();
        let lost_slash = format!("{}/src/main.rs", root.display()).trim_start_matches('/').to_string();
        let script = json!({"turns": [
            {"tool_calls": [{"name": "read", "arguments": {"path": lost_slash, "offset": 0, "limit": "2"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {
                "path": lost_slash, "edits": [], "old_string": "\"hi\"", "new_string": "\"hello\""}}]},
            {"tool_calls": [{"name": "read", "arguments": {"path": "src/mian.rs", "limit": null}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": lost_slash, "content": "gone\n"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "src/main.rs",
                "edits": [{"old_string": "main", "new_string": "start"}], "old_string": "fn", "new_string": "pub fn"}}]},
            {"text": "Done."}
        ]});
        h.server =
            tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(&script.to_string()).unwrap(), None)
                .await
                .unwrap();
        let out = h.run(&["-p", "say hello"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} {}", out.stderr);
        // Each near-miss understood: the file the path meant was read and edited.
        assert_eq!(
            std::fs::read_to_string(h.path("src/main.rs")).unwrap(),
            "fn main() {\n    println!(\"hello\");\n}\n"
        );
        assert!(!h.path(&lost_slash).exists(), "{wire:?}: write must not guess");
        let bodies = h.bodies();
        let result = |turn: usize| h.tool_results(&bodies[turn]).pop().unwrap();
        let meant = root.join("src/main.rs").display().to_string();
        let (read, failed) = result(1);
        assert!(!failed, "{wire:?}: {read}");
        assert!(read.starts_with("     1\tfn main() {\n     2\t    println!(\"hi\");\n"), "{wire:?}: {read}");
        assert!(
            read.ends_with(&format!(
                "[Note: understood `limit: \"2\"` as 2; `offset: 0` as the first line; `path: \"{lost_slash}\"` as {meant}.]"
            )),
            "{wire:?}: {read}"
        );
        let (edit, failed) = result(2);
        assert!(!failed && edit.starts_with("Edited src/main.rs: 1 replacement"), "{wire:?}: {edit}");
        assert!(edit.contains("`edits: []` beside `old_string`/`new_string` as that one edit"), "{wire:?}: {edit}");
        let (missing, failed) = result(3);
        assert!(failed, "{wire:?}: {missing}");
        assert!(missing.contains("File not found: src/mian.rs. Did you mean src/main.rs?"), "{wire:?}: {missing}");
        assert!(missing.contains("[Note: understood `limit: null` as not given.]"), "{wire:?}: {missing}");
        let (write, failed) = result(4);
        assert!(failed && write.contains(&format!("but {meant} exists. Which do you mean?")), "{wire:?}: {write}");
        let (both, failed) = result(5);
        assert!(failed && both.contains("edit: both `edits` and a top-level"), "{wire:?}: {both}");
    }
}
