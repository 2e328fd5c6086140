//! Sessions you can come back to, through the real binary against the mock:
//! `--continue` sends the earlier conversation as the first run sent it,
//! `--resume ID` picks the right one, a fork leaves the original alone, and a
//! session killed in the middle of a tool or a stream resumes valid.

use crate::common;

use std::path::PathBuf;

use common::{BOTH, Harness, Wire};
use serde_json::Value;

/// Every session file under the harness's TERN_HOME.
fn session_files(h: &Harness) -> Vec<PathBuf> {
    let dir = h.home.path().join("sessions");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn id_of(path: &std::path::Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// A request's messages without cache markers (they move to the latest turns by design).
fn messages(body: &Value, wire: Wire) -> Vec<Value> {
    let v = common::without_cache_markers(&body["messages"]);
    let list = v.as_array().cloned().unwrap_or_default();
    // OpenAI Chat carries the system prompt as the first message.
    match wire {
        Wire::OpenAi => list.into_iter().filter(|m| m["role"] != "system").collect(),
        Wire::Anthropic => list,
    }
}

fn all_text(body: &Value) -> String {
    body.to_string()
}

#[tokio::test]
async fn continue_sends_the_earlier_conversation_as_the_first_run_sent_it() {
    for wire in BOTH {
        let script = r#"{"turns":[
            {"text":"Looking.","tool_calls":[{"name":"bash","arguments":{"command":"echo hello-from-bash"}}]},
            {"text":"First answer."},
            {"text":"Second answer."}
        ]}"#;
        let h = Harness::new(wire, script).await;
        let out = h.run(&["-p", "first prompt"]).await;
        assert_eq!(out.code, Some(0), "{wire:?}: {}", out.stderr);
        let out = h.run(&["-c", "-p", "second prompt"]).await;
        assert_eq!(out.code, Some(0), "{wire:?}: {}", out.stderr);
        assert_eq!(out.stdout.trim(), "Second answer.");
        let bodies = h.bodies();
        assert_eq!(bodies.len(), 3, "{wire:?}");
        let before = messages(&bodies[1], wire);
        let after = messages(&bodies[2], wire);
        assert!(after.len() > before.len() + 1, "{wire:?}: {after:?}");
        assert_eq!(after[..before.len()], before[..], "{wire:?}: the resumed request starts with the first run's");
        assert!(all_text(&bodies[2]).contains("hello-from-bash"), "{wire:?}: the tool result came back");
        assert!(all_text(&bodies[2]).contains("First answer."), "{wire:?}");
        // The same system prompt and tools: the cached prefix holds across runs.
        let system = |b: &Value| if wire == Wire::Anthropic { b["system"].clone() } else { b["messages"][0].clone() };
        let (s1, s2) = (system(&bodies[1]), system(&bodies[2]));
        assert_eq!(common::without_cache_markers(&s1), common::without_cache_markers(&s2), "{wire:?}");
        assert_eq!(common::tool_names(&bodies[1]), common::tool_names(&bodies[2]), "{wire:?}");
        // One file, appended to.
        assert_eq!(session_files(&h).len(), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn resume_by_id_picks_that_session_and_a_fork_leaves_it_unchanged() {
    let script = r#"{"turns":[{"text":"one"},{"text":"two"},{"text":"three"}]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    assert_eq!(h.run(&["-p", "alpha prompt"]).await.code, Some(0));
    let first = session_files(&h).remove(0);
    assert_eq!(h.run(&["-p", "beta prompt"]).await.code, Some(0));
    let original = std::fs::read(&first).unwrap();
    // A prefix of the id is enough when only one session starts with it.
    let id = id_of(&first);
    let out = h.run(&["-r", &id, "--fork-session", "-p", "gamma prompt"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let last = h.bodies().pop().unwrap();
    assert!(all_text(&last).contains("alpha prompt"), "resumed the first session: {last}");
    assert!(!all_text(&last).contains("beta prompt"), "not the second");
    assert_eq!(std::fs::read(&first).unwrap(), original, "the fork left the original file as it was");
    let files = session_files(&h);
    assert_eq!(files.len(), 3);
    let forked = files.iter().find(|p| std::fs::read_to_string(p).unwrap().contains("gamma prompt")).unwrap();
    let header: Value = serde_json::from_str(std::fs::read_to_string(forked).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["forked_from"]["session"], id.as_str());
    // Unknown and malformed ids are usage errors that say what to do.
    let out = h.run(&["-r", "nope", "-p", "x"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("tern sessions list"), "{}", out.stderr);
    let out = h.run(&["-r", "../../etc/passwd", "-p", "x"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("not a session id"), "{}", out.stderr);
}

#[tokio::test]
async fn words_after_r_are_a_prompt_and_fork_needs_a_session_to_fork() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"},{"text":"two"}]}"#).await;
    assert_eq!(h.run(&["-p", "first"]).await.code, Some(0));
    let out = h.run(&["-p", "-r", "and now the docs"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "two", "the latest session went on with the prompt");
    assert!(all_text(&h.bodies().pop().unwrap()).contains("and now the docs"));
    let out = h.run(&["-p", "x", "--fork-session"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[tokio::test]
async fn usage_adds_up_over_a_resumed_session() {
    let script = r#"{"turns":[
        {"text":"one","usage":{"input_tokens":100,"output_tokens":10}},
        {"text":"two","usage":{"input_tokens":200,"output_tokens":20}}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(
        h.home.path().join("config.toml"),
        "[models.mock]\ncontext_window = 100000\nmax_output = 1000\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n",
    )
    .unwrap();
    assert_eq!(h.run(&["-p", "first"]).await.code, Some(0));
    let out = h.run(&["-c", "-p", "second", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(r["usage"]["input_tokens"], 200, "this run's");
    assert_eq!(r["session_usage"]["input_tokens"], 300, "the session's: {r}");
    assert_eq!(r["session_usage"]["output_tokens"], 30);
    let cost = r["session_cost_usd"].as_f64().unwrap();
    assert!((cost - 0.33).abs() < 1e-9, "{cost}");
    let list = h.run(&["sessions", "list", "--json"]).await;
    let v: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(v[0]["tokens"]["input_tokens"], 300, "{v}");
    assert!(h.run(&["sessions", "list"]).await.stdout.contains("$0.33"));
}

#[tokio::test]
async fn no_session_writes_nothing_and_continue_without_one_says_so() {
    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"ok"}]}"#).await;
    let out = h.run(&["-c", "-p", "hi"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("no session to continue"), "{}", out.stderr);
    assert_eq!(h.run(&["--no-session", "-p", "hi"]).await.code, Some(0));
    assert!(session_files(&h).is_empty());
}

#[tokio::test]
async fn a_cut_last_line_and_a_newer_format_are_handled() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"},{"text":"two"}]}"#).await;
    assert_eq!(h.run(&["-p", "first"]).await.code, Some(0));
    let file = session_files(&h).remove(0);
    // tern died while writing a line.
    let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    std::io::Write::write_all(&mut f, br#"{"id":"x1","parent":null,"type":"message","message":{"role":"assis"#)
        .unwrap();
    drop(f);
    let out = h.run(&["-c", "-p", "second"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("cut short"), "a notice says what was ignored: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "two");
    // Every complete line of the file still parses.
    let text = std::fs::read_to_string(&file).unwrap();
    let bad = text.lines().filter(|l| serde_json::from_str::<Value>(l).is_err()).count();
    assert_eq!(bad, 1, "only the cut line is bad, and it was closed: {text}");
    // A file from a newer tern is refused, not rewritten.
    let newer = h.home.path().join("sessions/20991231-000000-future.jsonl");
    let body = format!(
        "{{\"type\":\"session\",\"version\":7,\"id\":\"20991231-000000-future\",\"cwd\":\"{}\"}}\n",
        std::fs::canonicalize(h.workspace.path()).unwrap().display()
    );
    std::fs::write(&newer, &body).unwrap();
    let out = h.run(&["-r", "20991231-000000-future", "-p", "x"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("newer tern"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&newer).unwrap(), body);
}

/// Wait (bounded) for `f`; panics with `what` when it never holds.
async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn killed_during_a_tool_the_session_resumes_with_the_call_interrupted() {
    for wire in BOTH {
        let tag = format!("tern-kill-test-{}", std::process::id());
        let command = format!("touch started && sleep 30 # {tag}");
        let script = serde_json::json!({"turns": [
            {"text": "Running.", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "Picked up again."}
        ]})
        .to_string();
        let h = Harness::new(wire, &script).await;
        // Inside the workspace: the sandbox lets the command write there.
        let started = h.path("started");
        let mut child = h.command(&["-p", "run the long thing"]).spawn().unwrap();
        until("the command to start", || started.exists()).await;
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        for pid in common::processes_matching(&tag) {
            // SAFETY: kill with a pid read from /proc; at worst ESRCH.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let out = h.run(&["-c", "-p", "go on"]).await;
        assert_eq!(out.code, Some(0), "{wire:?}: {}", out.stderr);
        assert_eq!(out.stdout.trim(), "Picked up again.");
        assert!(out.stderr.contains("interrupted"), "{wire:?}: {}", out.stderr);
        let last = h.bodies().pop().unwrap();
        let results = h.tool_results(&last);
        assert_eq!(results.len(), 1, "{wire:?}: the call has a result: {last}");
        assert!(results[0].0.contains("interrupted"), "{wire:?}: {results:?}");
    }
}

#[tokio::test]
async fn killed_during_a_write_the_file_is_whole_or_absent_and_the_call_is_interrupted() {
    let tag = format!("tern-write-kill-{}", std::process::id());
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "whole file\n"}}]},
        {"text": "Back again."}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    // A pre_tool_use hook holds the write at its start, so the kill lands in the middle of the call.
    let marker = h.home.path().join("hook-started");
    let config = format!(
        "[retry]\nbase_delay_ms = 1\n[[hooks.pre_tool_use]]\nmatcher = \"write\"\ncommand = \"touch {} && sleep 30 # {tag}\"\ntimeout_sec = 60\n",
        marker.display()
    );
    std::fs::write(h.home.path().join("config.toml"), config).unwrap();
    let mut child = h.command(&["-p", "write it"]).spawn().unwrap();
    until("the write's hook to start", || marker.exists()).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    for pid in common::processes_matching(&tag) {
        // SAFETY: kill with a pid read from /proc; at worst ESRCH.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(!h.path("out.txt").exists(), "no half-written file");
    std::fs::write(h.home.path().join("config.toml"), "[retry]\nbase_delay_ms = 1\n").unwrap();
    let out = h.run(&["-c", "-p", "go on"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "Back again.");
    let results = h.tool_results(&h.bodies().pop().unwrap());
    assert_eq!(results.len(), 1);
    assert!(results[0].0.contains("interrupted") && results[0].1, "{results:?}");
}

#[tokio::test]
async fn killed_while_streaming_the_session_resumes_with_the_reply_marked_missing() {
    let long = "word ".repeat(400);
    let script = serde_json::json!({"chunk_delay_ms": 25, "turns": [{"text": long}, {"text": "ok"}]}).to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    let mut child = h.command(&["-p", "write a lot"]).spawn().unwrap();
    until("the request", || !h.server.requests().is_empty()).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let out = h.run(&["-c", "-p", "again"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let last = h.bodies().pop().unwrap();
    let roles: Vec<&str> = last["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "turns alternate: {last}");
    assert!(all_text(&last).contains("interrupted"), "{last}");
}

#[tokio::test]
async fn show_and_export_print_the_conversation_and_no_key_is_stored() {
    let script = r#"{"turns":[
        {"text":"Let me look.","tool_calls":[{"name":"bash","arguments":{"command":"echo listed-it"}}]},
        {"text":"All done."}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let mut cmd = h.command(&["-p", "show me"]);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-very-secret-test-key-0123456789");
    assert_eq!(cmd.output().await.unwrap().status.code(), Some(0));
    let id = id_of(&session_files(&h)[0]);
    let show = h.run(&["sessions", "show", &id]).await;
    assert_eq!(show.code, Some(0), "{}", show.stderr);
    for part in ["## You", "show me", "**bash**", "listed-it", "All done."] {
        assert!(show.stdout.contains(part), "{part}: {}", show.stdout);
    }
    let export = h.run(&["sessions", "export", &id[..15], "--format", "json"]).await;
    assert_eq!(export.code, Some(0), "{}", export.stderr);
    let v: Value = serde_json::from_str(&export.stdout).unwrap();
    assert_eq!(v["header"]["id"], id.as_str());
    assert_eq!(v["messages"].as_array().unwrap().len(), 4);
    // The key is in no file tern wrote.
    let mut stack = vec![h.home.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert!(!String::from_utf8_lossy(&bytes).contains("very-secret-test-key"), "{}", p.display());
            }
        }
    }
}

/// A session file of `n` messages (prompt and answer in turn) that ran in `workspace`, written directly.
fn big_session(dir: &std::path::Path, id: &str, workspace: &std::path::Path, n: usize) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join(format!("{id}.jsonl"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let header = serde_json::json!({"type": "session", "version": 1, "id": id, "cwd": workspace.display().to_string(),
        "provider": "anthropic", "model": "mock", "tern_version": "0", "started_at": "2026-01-01T00:00:00Z"});
    writeln!(f, "{header}").unwrap();
    let filler = "words ".repeat(4);
    for i in 0..n {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let parent = if i == 0 { Value::Null } else { Value::String(format!("e{}", i - 1)) };
        let entry = serde_json::json!({"id": format!("e{i}"), "parent": parent, "type": "message",
            "message": {"role": role, "content": [{"type": "text", "text": format!("message {i} {filler}")}]}});
        writeln!(f, "{entry}").unwrap();
    }
    f.flush().unwrap();
    path
}

#[tokio::test]
async fn a_damaged_newest_session_is_named_never_passed_over_for_an_older_one() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"},{"text":"two"}]}"#).await;
    assert_eq!(h.run(&["-p", "first"]).await.code, Some(0));
    let older = session_files(&h).remove(0);
    let before = std::fs::read(&older).unwrap();
    let ws = std::fs::canonicalize(h.workspace.path()).unwrap();
    let cut = format!(r#"{{"type":"session","version":1,"id":"x","cwd":"{}","prov"#, ws.display());
    let no_version = format!(r#"{{"type":"session","id":"20991231-000000-dmg005","cwd":"{}"}}"#, ws.display());
    let kinds: [(&str, Vec<u8>, &str); 5] = [
        ("20991231-000000-dmg001", Vec::new(), "empty"),
        ("20991231-000000-dmg002", b"garbage, not a header\n".to_vec(), "not JSON"),
        ("20991231-000000-dmg003", cut.into_bytes(), "cut short"),
        ("20991231-000000-dmg004", vec![0; 4096], "NUL"),
        ("20991231-000000-dmg005", (no_version + "\n").into_bytes(), "no format version"),
    ];
    for (id, bytes, why) in kinds {
        let file = h.home.path().join(format!("sessions/{id}.jsonl"));
        std::fs::write(&file, &bytes).unwrap();
        // Written after the good one, whatever the clock's grain.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(later).unwrap();
        let out = h.run(&["-c", "-p", "second"]).await;
        assert_eq!(out.code, Some(2), "{id}: refused: {}", out.stderr);
        for needle in [file.to_str().unwrap(), why, "tern -r", "tern sessions list"] {
            assert!(out.stderr.contains(needle), "{id}: `{needle}` in {}", out.stderr);
        }
        assert_eq!(std::fs::read(&older).unwrap(), before, "{id}: the older session was not taken instead");
        let list = h.run(&["sessions", "list"]).await;
        let row = list.stdout.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{}", list.stdout));
        assert!(row.contains("DAMAGED") && row.contains(why), "{row}");
        assert!(list.stdout.contains(&id_of(&older)), "{}", list.stdout);
        std::fs::remove_file(&file).unwrap();
    }
    // With the damaged file moved away, the newest of the rest goes on.
    let out = h.run(&["-c", "-p", "second"]).await;
    assert_eq!((out.code, out.stdout.trim()), (Some(0), "two"), "{}", out.stderr);
}

#[tokio::test]
async fn killed_during_a_fork_the_fork_is_whole_or_absent_and_continue_never_takes_a_cut_one() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"on the fork"},{"text":"went on"}]}"#).await;
    let ws = std::fs::canonicalize(h.workspace.path()).unwrap();
    let dir = h.home.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let messages = 10_003;
    let original = big_session(&dir, "20260101-000000-big001", &ws, messages);
    let before = std::fs::read(&original).unwrap();
    let mut child = h.command(&["-c", "--fork-session", "-p", "fork it"]).spawn().unwrap();
    // Killed as soon as the fork is being written (or, on a fast disk, once it is there).
    until("the fork to be written", || {
        std::fs::read_dir(&dir).unwrap().flatten().any(|e| e.file_name().to_string_lossy().ends_with(".partial"))
            || session_files(&h).len() > 1
    })
    .await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert_eq!(std::fs::read(&original).unwrap(), before, "the original is untouched");
    // Any fork file there holds every message of the original, plus at most this run's own.
    for file in session_files(&h).into_iter().filter(|f| *f != original) {
        let text = std::fs::read_to_string(&file).unwrap();
        let count = text.lines().filter(|l| l.contains(r#""type":"message""#)).count();
        assert!(count >= messages, "a fork cut short at {count} of {messages} messages: {}", file.display());
    }
    // What -c takes next holds the whole conversation.
    let out = h.run(&["-c", "-p", "and then"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = messages_of_last_request(&h);
    assert!(sent >= messages, "{sent} of {messages} messages sent");
}

/// How many messages the last request to the mock carried.
fn messages_of_last_request(h: &Harness) -> usize {
    messages(&h.bodies().pop().unwrap(), Wire::Anthropic).len()
}
