//! Agents that bring their own MCP servers (`mcpServers` in an agent file):
//! started with the agent under the trust rules of project servers, seen
//! only by it, stopped when it ends; a required one that cannot start fails
//! the agent, another leaves a notice. The server is `tern-test-mcp`, found
//! afterwards by the pid it wrote, never by its command line.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Harness, Wire, tool_names, write};
use serde_json::json;

use crate::mcp::test_server;

/// An agent file `helper` whose own server `mine` is the test server
/// writing its pid to `pid_file`.
fn helper_agent(pid_file: &Path) -> String {
    format!(
        "---\nname: helper\ndescription: uses its own server\nmcpServers:\n  - mine:\n      command: {:?}\n      \
         args: [--tools, 1, --pid-file, {:?}]\n---\nUse your own server.\n",
        test_server().display().to_string(),
        pid_file.display().to_string()
    )
}

/// Whether process `pid` is still there (a zombie counts: it was not waited for).
fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid.trim()).exists()
}

/// The parent calls `helper` through `task`; the child calls its server's
/// `echo`, then answers; the parent then checks with bash whether the
/// server's process (its pid in the workspace's `mine.pid`) is still there,
/// and ends.
fn script() -> String {
    let check =
        "p=$(cat mine.pid); if [ -e /proc/$p ]; then echo \"SERVER ALIVE $p\"; else echo \"SERVER GONE $p\"; fi";
    json!({"turns": [
        {"when_request_contains": "ECHO-FROM-ITS-OWN-SERVER", "text": "the child used its server"},
        {"when_request_contains": "You are a subagent (helper)",
         "tool_calls": [{"name": "mcp__mine__echo", "arguments": {"text": "ECHO-FROM-ITS-OWN-SERVER"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "use it", "prompt": "Echo something", "subagent_type": "helper"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": check}}]},
        {"text": "done"}
    ]})
    .to_string()
}

fn user_agent(h: &Harness, text: &str) -> PathBuf {
    let path = h.home.path().join("agents/helper.md");
    write(&path, text);
    path
}

#[tokio::test]
async fn an_agents_own_server_serves_only_it_and_is_gone_when_it_ends() {
    let h = Harness::new(Wire::Anthropic, &script()).await;
    let pid_file = h.path("mine.pid");
    user_agent(&h, &helper_agent(&pid_file));
    let out = h.run(&["-p", "delegate it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 5, "parent, child twice, parent twice");
    let is_child = |b: &serde_json::Value| b.to_string().contains("You are a subagent (helper)");
    // The child saw and called its server's tool; the parent never saw it.
    for b in &bodies {
        let has = tool_names(b).contains(&"mcp__mine__echo".to_string());
        assert_eq!(has, is_child(b), "only the agent sees its server's tools");
    }
    let child_results = h.tool_results(&bodies[2]);
    assert_eq!(child_results, [("ECHO-FROM-ITS-OWN-SERVER".to_string(), false)]);
    // The server had started, and was gone once the task ended, while tern still ran.
    let pid = std::fs::read_to_string(&pid_file).expect("the agent's server started");
    let results = h.tool_results(&bodies[4]);
    let check = &results.last().unwrap().0;
    assert!(check.contains(&format!("SERVER GONE {}", pid.trim())), "{check}");
    assert!(!alive(&pid));
}

#[tokio::test]
async fn a_project_agent_starts_its_server_only_in_a_trusted_folder() {
    let h = Harness::new(Wire::Anthropic, &script()).await;
    let pid_file = h.path("mine.pid");
    write(&h.path(".claude/agents/helper.md"), &helper_agent(&pid_file));
    // Untrusted: the task fails naming the folder and how to trust it; nothing started.
    let untrusted = json!({"turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "use it", "prompt": "Echo", "subagent_type": "helper"}}]},
        {"text": "done"}
    ]})
    .to_string();
    let h2 = Harness::new(Wire::Anthropic, &untrusted).await;
    let untrusted_pid = h2.path("mine.pid");
    write(&h2.path(".claude/agents/helper.md"), &helper_agent(&untrusted_pid));
    let out = h2.run(&["-p", "delegate it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h2.bodies();
    assert_eq!(bodies.len(), 2, "no child ran");
    let (text, is_error) = h2.tool_results(&bodies[1]).pop().unwrap();
    assert!(is_error && text.contains("not trusted") && text.contains("tern trust"), "{text}");
    assert!(!untrusted_pid.exists(), "an untrusted project's agent started its server");
    // Trusted: the same file's server starts, serves the agent, and stops with it.
    let out = h.run(&["-p", "delegate it", "--trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(h.tool_results(&bodies[2]), [("ECHO-FROM-ITS-OWN-SERVER".to_string(), false)]);
    let pid = std::fs::read_to_string(&pid_file).expect("the trusted agent's server started");
    let check = &h.tool_results(&bodies[4]).last().unwrap().0.clone();
    assert!(check.contains("SERVER GONE"), "{check}");
    assert!(!alive(&pid));
}

#[tokio::test]
async fn a_required_server_that_cannot_start_fails_the_agent_at_once() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (helper)", "text": "the child should never run"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "use it", "prompt": "Echo", "subagent_type": "helper"}}]},
        {"text": "done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    user_agent(
        &h,
        "---\nname: helper\nmcpServers:\n  - mine:\n      command: /nonexistent/tern-no-such-server\n      required: true\n---\nx\n",
    );
    let out = h.run(&["-p", "delegate it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "the child made no request");
    let (text, is_error) = h.tool_results(&bodies[1]).pop().unwrap();
    assert!(is_error, "{text}");
    assert!(
        text.contains("agent `helper` cannot start: its required MCP server `mine` did not start")
            && text.contains("command not found"),
        "{text}"
    );
}

#[tokio::test]
async fn a_server_that_is_not_required_and_fails_leaves_a_notice_and_the_agent_runs() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("slow.pid");
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (helper)", "text": "ran without it"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "use it", "prompt": "Echo", "subagent_type": "helper"}}]},
        {"text": "done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    // It never answers the handshake in time.
    let agent = format!(
        "---\nname: helper\nmcpServers:\n  - slow:\n      command: {:?}\n      args: [--start-delay-ms, 60000, --pid-file, {:?}]\n      \
         startup_timeout_sec: 1\n---\nx\n",
        test_server().display().to_string(),
        pid_file.display().to_string()
    );
    user_agent(&h, &agent);
    let out = h.run(&["-p", "delegate it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("agent `helper`: its MCP server `slow` did not start")
            && out.stderr.contains("the agent runs without it"),
        "{}",
        out.stderr
    );
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3, "the child ran");
    assert_eq!(h.tool_results(&bodies[2]), [("ran without it".to_string(), false)]);
    let pid = std::fs::read_to_string(&pid_file).expect("the server was started");
    assert!(!alive(&pid), "the server that timed out is not left running");
}

#[tokio::test]
async fn the_main_agent_brings_its_servers_too_and_a_required_failure_stops_the_start() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("mine.pid");
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__mine__echo", "arguments": {"text": "MAIN-ECHO"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    user_agent(&h, &helper_agent(&pid_file));
    let out = h.run(&["-p", "use it", "--agent", "helper"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.tool_results(&h.bodies()[1]), [("MAIN-ECHO".to_string(), false)]);
    let pid = std::fs::read_to_string(&pid_file).expect("the agent's server started");
    assert!(!alive(&pid), "stopped when tern exited");

    user_agent(
        &h,
        "---\nname: helper\nmcpServers:\n  - mine:\n      command: /nonexistent/tern-no-such-server\n      required: true\n---\nx\n",
    );
    let before = h.bodies().len();
    let out = h.run(&["-p", "use it", "--agent", "helper"]).await;
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("its required MCP server `mine` did not start"), "{}", out.stderr);
    assert_eq!(h.bodies().len(), before, "no request was sent");
}

#[tokio::test]
async fn an_interrupted_agent_leaves_no_server_running() {
    use tokio::io::AsyncBufReadExt;
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (helper)",
         "tool_calls": [{"name": "mcp__mine__hang", "arguments": {}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "wait", "prompt": "Hang", "subagent_type": "helper"}}]},
        {"text": "unreachable"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let pid_file = h.path("mine.pid");
    user_agent(&h, &helper_agent(&pid_file));
    let mut child = h.command(&["-p", "go", "--output-format", "tern-events"]).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // The child's call of its server's `hang` has started.
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "tool_call_start" && v["name"] == "mcp__mine__hang" {
            break;
        }
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the agent's server started");
    assert!(alive(&pid));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    while lines.next_line().await.unwrap().is_some() {}
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!alive(&pid), "the agent's server is not left running");
}

#[tokio::test]
async fn a_background_agents_server_stops_when_it_ends() {
    let check =
        "p=$(cat mine.pid); if [ -e /proc/$p ]; then echo \"SERVER ALIVE $p\"; else echo \"SERVER GONE $p\"; fi";
    let script = json!({"turns": [
        {"when_request_contains": "ECHO-FROM-ITS-OWN-SERVER", "text": "the child used its server"},
        {"when_request_contains": "You are a subagent (helper)",
         "tool_calls": [{"name": "mcp__mine__echo", "arguments": {"text": "ECHO-FROM-ITS-OWN-SERVER"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "use it", "prompt": "Echo", "subagent_type": "helper", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": check}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let pid_file = h.path("mine.pid");
    user_agent(&h, &helper_agent(&pid_file));
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let parent: Vec<serde_json::Value> =
        h.bodies().into_iter().filter(|b| !b.to_string().contains("You are a subagent")).collect();
    let (answer, _) = h.tool_results(&parent[2]).pop().unwrap();
    assert!(answer.contains("the child used its server"), "{answer}");
    let (check, _) = h.tool_results(&parent[3]).pop().unwrap();
    let pid = std::fs::read_to_string(&pid_file).expect("the agent's server started");
    assert!(check.contains(&format!("SERVER GONE {}", pid.trim())), "{check}");
}

/// An agent file `helper` whose own server `slow` starts (writes its pid)
/// and never answers the handshake within the test; `required` as given.
fn slow_agent(pid_file: &Path, required: bool) -> String {
    format!(
        "---\nname: helper\nmcpServers:\n  - slow:\n      command: {:?}\n      args: [--start-delay-ms, 120000, --pid-file, {:?}]\n      \
         startup_timeout_sec: 120\n      required: {required}\n---\nx\n",
        test_server().display().to_string(),
        pid_file.display().to_string()
    )
}

/// Whether process `pid` is gone within 3 s: a server still starting is
/// killed (SIGKILL to its group) but not waited for, so it may take a moment.
async fn gone_soon(pid: &str) -> bool {
    for _ in 0..60 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// Wait until `pid_file` holds a pid (the server was spawned), at most 20 s.
async fn started(pid_file: &Path) -> String {
    for _ in 0..400 {
        if let Ok(pid) = std::fs::read_to_string(pid_file)
            && !pid.trim().is_empty()
        {
            return pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{} was never written", pid_file.display());
}

/// SIGINT to `child`, which must exit with 130 within 10 s, not wait for `what`.
async fn interrupted_within_10_s(child: &mut tokio::process::Child, what: &str) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .unwrap_or_else(|_| panic!("tern waited for {what}"))
        .unwrap();
    assert_eq!(status.code(), Some(130));
}

#[tokio::test]
async fn an_agent_interrupted_while_its_servers_start_ends_at_once_and_leaves_none() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (helper)", "text": "the child should never run"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "wait", "prompt": "x", "subagent_type": "helper"}}]},
        {"text": "unreachable"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("slow.pid");
    user_agent(&h, &slow_agent(&pid_file, true));
    let mut child = h.command(&["-p", "go"]).spawn().unwrap();
    let pid = started(&pid_file).await;
    assert!(alive(&pid));
    interrupted_within_10_s(&mut child, "the agent's server to start").await;
    assert!(gone_soon(&pid).await, "the agent's server is not left running");
    assert_eq!(h.bodies().len(), 1, "the child made no request");
}

#[tokio::test]
async fn with_agent_a_slow_session_server_does_not_hold_up_the_required_check() {
    let pids = tempfile::tempdir().unwrap();
    let (mine_pid, slow_pid) = (pids.path().join("mine.pid"), pids.path().join("slow.pid"));
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__mine__echo", "arguments": {"text": "MAIN-ECHO"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    user_agent(&h, &helper_agent(&mine_pid).replace("      args:", "      required: true\n      args:"));
    // A configured server of the session that never answers the handshake within the test.
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[mcp_servers.slowpoke]\ncommand = {:?}\nargs = [\"--start-delay-ms\", \"120000\", \"--pid-file\", {:?}]\n\
         startup_timeout_sec = 120\n",
        test_server().display().to_string(),
        slow_pid.display().to_string()
    ));
    std::fs::write(&config, text).unwrap();
    let began = std::time::Instant::now();
    let out = tokio::time::timeout(std::time::Duration::from_secs(40), h.run(&["-p", "use it", "--agent", "helper"]))
        .await
        .expect("the required check waited for every session server");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(began.elapsed() < std::time::Duration::from_secs(40));
    assert_eq!(h.tool_results(&h.bodies()[1]), [("MAIN-ECHO".to_string(), false)]);
    let pid = std::fs::read_to_string(&slow_pid).expect("the session's slow server was started");
    assert!(gone_soon(&pid).await, "stopped when tern exited");
}

#[tokio::test]
async fn an_agent_whose_task_is_interrupted_while_its_servers_start_stops_them_and_the_session_goes_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (helper)", "text": "the child should never run"},
        {"when_request_contains": "again", "text": "after"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "wait", "prompt": "x", "subagent_type": "helper"}}]},
        {"text": "unreachable"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("slow.pid");
    user_agent(&h, &slow_agent(&pid_file, false));
    let mut cmd = h.command(&["--input-format", "stream-json", "--output-format", "stream-json"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let user = |text: &str| {
        format!(
            "{}\n",
            json!({"type": "user", "session_id": "", "message": {"role": "user", "content": text}, "parent_tool_use_id": null})
        )
    };
    stdin.write_all(user("go").as_bytes()).await.unwrap();
    let pid = started(&pid_file).await;
    let asked = std::time::Instant::now();
    let interrupt = json!({"type": "control_request", "request_id": "i1", "request": {"subtype": "interrupt"}});
    stdin.write_all(format!("{interrupt}\n").as_bytes()).await.unwrap();
    let result = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "result" {
                return v;
            }
        }
        panic!("no result");
    };
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), result)
        .await
        .expect("the interrupt waited for the agent's server to start");
    assert_eq!(result["terminal_reason"], "aborted", "{result}");
    assert!(asked.elapsed() < std::time::Duration::from_secs(10));
    assert!(gone_soon(&pid).await, "the agent's server is not left running");
    // The session goes on.
    stdin.write_all(user("again").as_bytes()).await.unwrap();
    drop(stdin);
    let mut last = serde_json::Value::Null;
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "result" {
            last = v;
        }
    }
    assert_eq!(last["result"], "after", "{last}");
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn a_project_agents_relative_command_starts_in_the_folder_holding_it() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__mine__echo", "arguments": {"text": "FROM-THE-ROOTS-TOOL"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    std::fs::create_dir_all(h.path(".git")).unwrap();
    std::fs::create_dir_all(h.path("pkg/tools")).unwrap();
    // The repository's own launcher, in its top folder; a nested folder has none of that name.
    let launcher = h.path("tools/srv");
    write(&launcher, &format!("#!/bin/sh\nexec {:?} \"$@\"\n", test_server().display().to_string()));
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pid_file = h.path("mine.pid");
    write(
        &h.path(".claude/agents/helper.md"),
        &format!(
            "---\nname: helper\nmcpServers:\n  - mine:\n      command: ./tools/srv\n      args: [--tools, 1, --pid-file, {:?}]\n      \
             required: true\n---\nx\n",
            pid_file.display().to_string()
        ),
    );
    let root = h.workspace.path().display().to_string();
    assert_eq!(h.run(&["trust", &root]).await.code, Some(0));
    let pkg = h.path("pkg").display().to_string();
    let out = h.run(&["-p", "use it", "--cwd", &pkg, "--agent", "helper"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.tool_results(&h.bodies()[1]), [("FROM-THE-ROOTS-TOOL".to_string(), false)]);
    assert!(pid_file.exists(), "the root's launcher ran");
}

#[tokio::test]
async fn with_agent_a_signal_while_a_required_server_starts_ends_tern_at_once() {
    let h = Harness::new(Wire::Anthropic, &json!({"turns": [{"text": "unreachable"}]}).to_string()).await;
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("slow.pid");
    user_agent(&h, &slow_agent(&pid_file, true));
    let mut child = h.command(&["-p", "go", "--agent", "helper"]).spawn().unwrap();
    let pid = started(&pid_file).await;
    // Past the session's 3 s wait for its servers: the required check is what holds it now.
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    interrupted_within_10_s(&mut child, "the required server to start").await;
    assert!(gone_soon(&pid).await, "the agent's server is not left running");
    assert!(h.bodies().is_empty(), "no request was sent");
}
