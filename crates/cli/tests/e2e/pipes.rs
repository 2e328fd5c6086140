//! Pipes and signals: a reader that goes away, a stdout nobody reads, and
//! the signals that end a run, in `-p`, stream-json and ACP (docs/headless.md,
//! "Exit codes").

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::common::{self, Harness, Wire, wait_gone, wait_present};

/// A script whose one tool call prints `started` and sleeps (`marker` tells the sleep apart).
fn sleeping(marker: &str) -> String {
    let command = format!("echo started; sleep {marker}");
    json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "unreachable"}
    ]})
    .to_string()
}

fn signal(child: &tokio::process::Child, signo: i32) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, signo) };
}

async fn exit_code(child: &mut tokio::process::Child) -> Option<i32> {
    tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("tern exits in time").unwrap().code()
}

/// The first prompt of the folder's newest session, as `tern sessions list` shows it.
async fn saved_prompt(h: &Harness) -> String {
    let out = h.run(&["sessions", "list", "--json"]).await;
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    list[0]["first_prompt"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_reader_gone_mid_run_ends_it_with_141_the_session_saved_and_nothing_running() {
    // `tern -p … 2>&1 | head`: stdout and stderr share one pipe whose reader goes away mid-run.
    let marker = "4201.5";
    let h = Harness::new(Wire::Anthropic, &sleeping(marker)).await;
    let (reader, writer) = std::io::pipe().unwrap();
    let mut cmd = h.command(&["-p", "go", "--verbose"]);
    cmd.stdout(writer.try_clone().unwrap()).stderr(writer);
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    assert!(!wait_present(&format!("sleep {marker}")).await.is_empty(), "the command never started");
    drop(reader);
    assert_eq!(exit_code(&mut child).await, Some(141), "ended as a broken pipe, not a panic (101)");
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new(), "the command was stopped");
    assert_eq!(h.server.requests().len(), 1, "nothing more went to the model");
    assert_eq!(saved_prompt(&h).await, "go");
}

#[tokio::test]
async fn a_closed_stderr_pipe_is_no_panic() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"hello"}]}"#).await;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = h.command(&["-p", "hi", "--verbose"]);
    cmd.stderr(writer);
    let out = cmd.spawn().unwrap().wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", String::from_utf8_lossy(&out.stdout));
}

/// `tern -p` (stream-json) whose stdout nobody reads: its one answer is far
/// larger than a pipe holds.
async fn blocked_on_stdout(h: &Harness) -> (tokio::process::Child, tokio::process::ChildStdout) {
    let mut child = h.command(&["-p", "go", "--output-format", "stream-json", "--verbose"]).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    // Asked, so the answer comes next; far larger than a pipe holds, it cannot all be written.
    h.wait_for_requests(1).await;
    (child, stdout)
}

fn big_answer() -> String {
    json!({"turns": [{"text": "x".repeat(512 * 1024)}]}).to_string()
}

#[tokio::test]
async fn sigterm_ends_a_run_whose_stdout_is_not_read_with_143() {
    let h = Harness::new(Wire::Anthropic, &big_answer()).await;
    let (mut child, _unread) = blocked_on_stdout(&h).await;
    signal(&child, libc::SIGTERM);
    assert_eq!(exit_code(&mut child).await, Some(143));
}

#[tokio::test]
async fn two_sigints_end_a_run_whose_stdout_is_not_read_with_130() {
    let h = Harness::new(Wire::Anthropic, &big_answer()).await;
    let (mut child, _unread) = blocked_on_stdout(&h).await;
    signal(&child, libc::SIGINT);
    // A person's second Ctrl-C, 0.2 s later (two signals at once may arrive as one).
    tokio::time::sleep(Duration::from_millis(200)).await;
    signal(&child, libc::SIGINT);
    assert_eq!(exit_code(&mut child).await, Some(130));
}

/// `tern -p` printing tern-events; returns once the tool call printed `started`
/// (the rest of stdout is read on, and returned at the end).
async fn started(
    h: &Harness,
    args: &[&str],
) -> (tokio::process::Child, tokio::task::JoinHandle<Vec<serde_json::Value>>) {
    let mut child = h.command(args).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let done = v["type"] == "tool_execution_update" && v["text"].as_str().unwrap_or("").contains("started");
        seen.push(v);
        if done {
            break;
        }
    }
    let rest = tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.extend(serde_json::from_str(&line).ok());
        }
        seen
    });
    (child, rest)
}

#[tokio::test]
async fn sigterm_and_sighup_end_a_headless_run_with_128_plus_the_signal() {
    for (signo, code, marker) in [(libc::SIGTERM, 143, "4202.5"), (libc::SIGHUP, 129, "4203.5")] {
        let h = Harness::new(Wire::Anthropic, &sleeping(marker)).await;
        let (mut child, rest) = started(&h, &["-p", "go", "--output-format", "tern-events"]).await;
        signal(&child, signo);
        assert_eq!(exit_code(&mut child).await, Some(code), "signal {signo}");
        let seen = rest.await.unwrap();
        let result = seen.last().unwrap();
        assert_eq!(result["terminal_reason"], "aborted", "the result is still written: {result}");
        assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new());
        assert_eq!(h.server.requests().len(), 1);
    }
}

#[tokio::test]
async fn sigterm_ends_stream_json_input_with_143() {
    let marker = "4204.5";
    let h = Harness::new(Wire::Anthropic, &sleeping(marker)).await;
    let mut cmd = h.command(&["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]);
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\n").await.unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    assert!(!wait_present(&format!("sleep {marker}")).await.is_empty(), "the command never started");
    signal(&child, libc::SIGTERM);
    assert_eq!(exit_code(&mut child).await, Some(143));
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new());
    drop(stdin);
}

#[tokio::test]
async fn a_stream_json_client_that_dies_mid_prompt_cancels_it() {
    let marker = "4205.5";
    let h = Harness::new(Wire::Anthropic, &sleeping(marker)).await;
    let mut cmd = h.command(&["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]);
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\n").await.unwrap();
    let stdout = child.stdout.take().unwrap();
    assert!(!wait_present(&format!("sleep {marker}")).await.is_empty(), "the command never started");
    // The client dies: both its ends of tern's pipes close.
    drop(stdin);
    drop(stdout);
    assert_eq!(exit_code(&mut child).await, Some(141));
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new(), "the running command was stopped");
    assert_eq!(h.server.requests().len(), 1, "nothing more went to the model");
    assert_eq!(saved_prompt(&h).await, "go");
}

#[tokio::test]
async fn sigterm_and_sighup_end_acp_with_128_plus_the_signal() {
    for (signo, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"x"}]}"#).await;
        let mut cmd = h.command(&["acp"]);
        let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": 1, "clientCapabilities": {}}});
        stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        // Answered: tern serves, its signals are watched.
        let answer = lines.next_line().await.unwrap().unwrap();
        assert!(answer.contains("protocolVersion"), "{answer}");
        signal(&child, signo);
        assert_eq!(exit_code(&mut child).await, Some(code), "signal {signo}");
        drop(stdin);
    }
}

#[tokio::test]
async fn processes_are_found_by_this_tests_marker_only() {
    // A process of someone else's with the same command line is not ours.
    let mut other = std::process::Command::new("sleep").arg("4206.5").env_remove(common::MARKER_VAR).spawn().unwrap();
    let mut ours = std::process::Command::new("sleep")
        .arg("4206.5")
        .env(common::MARKER_VAR, common::run_marker())
        .spawn()
        .unwrap();
    let found = wait_present("sleep 4206.5").await;
    let _ = (other.kill(), ours.kill(), other.wait(), ours.wait());
    assert_eq!(found, vec![ours.id()]);
}

/// The same test as an ordinary user: as root, /proc/PID/environ of any
/// process is readable, which could hide a marker search that works only for
/// root. The test binary runs that one test again as nobody, through setpriv.
#[test]
fn as_an_ordinary_user_processes_are_found_by_the_marker() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: processes_are_found_by_this_tests_marker_only already runs as an ordinary user");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(home.path(), Some(65534), Some(65534)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["--exact", "pipes::processes_are_found_by_this_tests_marker_only", "--nocapture"])
        .env("HOME", home.path())
        .env_remove(common::MARKER_VAR)
        .output()
        .expect("setpriv (util-linux) runs the test binary as nobody");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "as nobody: {text}");
    assert!(text.contains("1 passed"), "the test did not run as nobody: {text}");
}

/// The children of `pid` (from `/proc/PID/task/*/children`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// A Ctrl-C while a slow MCP server starts ends the run at once: start-up
/// waits up to 3 s for servers, and a signal cuts that wait short.
#[tokio::test]
async fn sigint_while_an_mcp_server_starts_ends_the_run_at_once() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"unreachable"}]}"#).await;
    let marker = "4211.5";
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"{marker}\"]\n"));
    std::fs::write(&config, text).unwrap();
    let mut child = h.command(&["-p", "hi"]).spawn().unwrap();
    let pid = child.id().unwrap();
    // The server is spawned: tern is waiting for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let is_server = |p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == format!("sleep\0{marker}\0").into_bytes())
    };
    while !children_of(pid).iter().any(is_server) {
        assert!(std::time::Instant::now() < deadline, "the MCP server never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let signalled = std::time::Instant::now();
    signal(&child, libc::SIGINT);
    assert_eq!(exit_code(&mut child).await, Some(130));
    let took = signalled.elapsed();
    assert!(took < Duration::from_millis(2500), "the 3 s wait for servers was not cut short: {took:?}");
    assert!(h.server.requests().is_empty(), "no prompt was started");
}
