//! A full disk under the sessions folder, for real: the binary runs in a
//! mount namespace of its own (`unshare`) with a small tmpfs, filled, on
//! `$TERN_HOME/sessions`. What a run cannot save is said (an error result,
//! a non-zero exit), nothing is torn, and what was held back is written
//! once space comes back. Skipped visibly where tmpfs cannot be mounted;
//! failed there when `TERN_REQUIRE` names `tmpfs` (as CI does).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{Harness, Wire};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Mounts a 256 KiB tmpfs on `$D`, fills it, runs tern (`"$@"`), then keeps
/// a listing and a copy of what the tmpfs held (it ends with the namespace).
const SCRIPT: &str = r#"mount -t tmpfs -o size=256k tmpfs "$D" || exit 97
head -c 400000 /dev/zero > "$D/filler" 2>/dev/null
"$@"; rc=$?
rm -f "$D/filler"
ls -A "$D" > "$OUT/listing"
cp -r "$D/." "$OUT/after"
exit $rc"#;

/// `tern args…` under a full sessions folder, or `None` (said) where tmpfs cannot be had.
fn full_disk_command(h: &Harness, args: &[&str], out: &Path) -> Option<tokio::process::Command> {
    let unshare = match tern_sandbox::require::tmpfs_unshare() {
        Ok(a) => a,
        Err(why) => {
            assert!(!tern_sandbox::require::skip("tmpfs", Some(&why)).unwrap_or_else(|why| panic!("{why}")));
            return None;
        }
    };
    let sessions = h.home.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::create_dir_all(out.join("after")).unwrap();
    let tern = h.command(args);
    let std = tern.as_std();
    let mut cmd = tokio::process::Command::new("unshare");
    cmd.args(unshare).args(["sh", "-c", SCRIPT, "sh"]).arg(std.get_program()).args(std.get_args());
    cmd.current_dir(h.workspace.path()).env("D", &sessions).env("OUT", out);
    for (k, v) in std.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    Some(cmd)
}

/// The session files (`*.jsonl`) in `dir`.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    out
}

/// The texts of the messages in a session file; every line must parse.
fn message_texts(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.ends_with('\n'), "no torn last line: {text}");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("a torn line {l}: {e}")))
        .filter(|v| v["type"] == "message")
        .map(|v| {
            let content = &v["message"]["content"];
            content.as_str().map(str::to_string).unwrap_or_else(|| content[0]["text"].as_str().unwrap_or("").into())
        })
        .collect()
}

#[tokio::test]
async fn print_mode_on_a_full_disk_fails_with_an_error_result_and_leaves_no_empty_file() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"}]}"#).await;
    let out = tempfile::tempdir().unwrap();
    let Some(mut cmd) = full_disk_command(&h, &["-p", "first", "--output-format", "json"], out.path()) else {
        return;
    };
    let run = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output()).await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(1), "not saved is a failure: {stdout}\n{stderr}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["subtype"], "error_session_not_saved", "{result}");
    assert_eq!(result["result"], "one", "the answer is still given: {result}");
    let errors = result["errors"].to_string();
    assert!(errors.contains("No space left on device") && errors.contains("not written yet"), "{errors}");
    assert!(stderr.contains("not saved"), "{stderr}");
    // Not even an empty file: the header never reached the disk, so there is no session to find.
    let listing = std::fs::read_to_string(out.path().join("listing")).unwrap();
    assert!(!listing.contains(".jsonl"), "no session file, whole or partial: {listing}");
}

#[tokio::test]
async fn held_back_entries_are_written_in_order_when_space_comes_back() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"},{"text":"two"}]}"#).await;
    let out = tempfile::tempdir().unwrap();
    let args = ["--input-format", "stream-json", "--output-format", "stream-json"];
    let Some(mut cmd) = full_disk_command(&h, &args, out.path()) else { return };
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let result = async |lines: &mut tokio::io::Lines<_>| -> Value {
        let read = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["type"] == "result" {
                    return v;
                }
            }
            panic!("stdout ended before a result");
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), read).await.expect("a result in time")
    };
    let user = |text: &str| json!({"type": "user", "message": {"role": "user", "content": text}}).to_string() + "\n";
    stdin.write_all(user("first").as_bytes()).await.unwrap();
    let first = result(&mut lines).await;
    assert_eq!((first["is_error"].clone(), first["subtype"].clone()), (json!(true), json!("error_session_not_saved")));
    // Space comes back (seen through the namespace's own root).
    let sessions = h.home.path().join("sessions");
    let inside = PathBuf::from(format!("/proc/{}/root", child.id().unwrap())).join(sessions.strip_prefix("/").unwrap());
    std::fs::remove_file(inside.join("filler")).unwrap();
    stdin.write_all(user("second").as_bytes()).await.unwrap();
    let second = result(&mut lines).await;
    assert_eq!(second["is_error"], false, "{second}");
    // Everything, in order, whole: the held-back header and first turn, then the second.
    let files = session_files(&inside);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(message_texts(&files[0]), ["first", "one", "second", "two"]);
    drop(stdin);
    let status = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(1), "a prompt of the run was not saved when it ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_keeps_a_warning_in_the_status_line_until_the_session_is_saved() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"first answer"},{"text":"second answer"}]}"#).await;
    let unshare = match tern_sandbox::require::tmpfs_unshare() {
        Ok(a) => a,
        Err(why) => {
            assert!(tern_sandbox::require::skip("tmpfs", Some(&why)).unwrap_or_else(|why| panic!("{why}")));
            return;
        }
    };
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(out.path().join("after")).unwrap();
    let sessions = h.home.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let mut wrapper = vec!["unshare"];
    wrapper.extend(unshare);
    wrapper.extend(["sh", "-c", SCRIPT, "sh"]);
    let env = [("D", sessions.to_str().unwrap()), ("OUT", out.path().to_str().unwrap())];
    let mut s = common::screen::start_wrapped(&h, (100, 30), &wrapper, &[], &env);
    s.wait_for("Ask tern");
    s.type_text("first\r");
    s.wait_for("first answer");
    s.wait_for("⚠ session not saved to disk");
    s.wait_for("✗ not saved: cannot write session file");
    // Space comes back: the next run writes what was held back, and the warning goes.
    let pid = s.child.process_id().unwrap();
    let inside = PathBuf::from(format!("/proc/{pid}/root")).join(sessions.strip_prefix("/").unwrap());
    std::fs::remove_file(inside.join("filler")).unwrap();
    s.type_text("second\r");
    s.wait_for("second answer");
    s.wait_until_gone("⚠ session not saved to disk");
    let files = session_files(&inside);
    assert_eq!(message_texts(&files[0]), ["first", "first answer", "second", "second answer"]);
    common::screen::quit(&mut s);
}

#[tokio::test]
async fn acp_ends_a_prompt_whose_session_is_not_saved_with_an_error() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"}]}"#).await;
    let out = tempfile::tempdir().unwrap();
    let Some(mut cmd) = full_disk_command(&h, &["acp"], out.path()) else { return };
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Plain JSON-RPC: the answer to request `id`, past the notifications.
    let mut call = async |id: u64, method: &str, params: Value| -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n";
        stdin.write_all(line.as_bytes()).await.unwrap();
        let read = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id && v.get("method").is_none() {
                    return v;
                }
            }
            panic!("stdout ended before the answer to {method}");
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), read).await.expect("an answer in time")
    };
    call(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    let cwd = std::fs::canonicalize(h.workspace.path()).unwrap();
    let session = call(2, "session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    let id = session["result"]["sessionId"].clone();
    let answer = call(3, "session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]})).await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not saved") && message.contains("No space left"), "{answer}");
}

/// A cancelled prompt ends as cancelled, as ACP asks; what a full disk kept
/// from being saved is still said (on stderr), never passed over.
#[tokio::test]
async fn acp_says_a_cancelled_prompt_was_not_saved() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one","faults":[{"stall_after_events":0}]}]}"#).await;
    let out = tempfile::tempdir().unwrap();
    let Some(mut cmd) = full_disk_command(&h, &["acp"], out.path()) else { return };
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |message: Value| {
        stdin.write_all((message.to_string() + "\n").as_bytes()).await.unwrap();
    };
    let mut answer = async |id: u64| -> Value {
        let read = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id && v.get("method").is_none() {
                    return v;
                }
            }
            panic!("stdout ended before the answer to {id}");
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), read).await.expect("an answer in time")
    };
    let request =
        |id: u64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    send(request(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))).await;
    answer(1).await;
    let cwd = std::fs::canonicalize(h.workspace.path()).unwrap();
    send(request(2, "session/new", json!({"cwd": cwd, "mcpServers": []}))).await;
    let id = answer(2).await["result"]["sessionId"].clone();
    send(request(3, "session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}))).await;
    // The model's answer never comes: the request is in flight when the cancel arrives.
    h.wait_for_requests(1).await;
    send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}})).await;
    let answer = answer(3).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    drop(stdin);
    let mut text = String::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), stderr.read_to_string(&mut text)).await.unwrap().unwrap();
    assert!(text.contains("not saved") && text.contains("No space left"), "{text}");
}
