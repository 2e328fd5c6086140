//! MCP servers and the catalog through the real binary: our own rmcp test
//! server (`tern-test-mcp`) and the npm reference servers, against the mock
//! model over HTTP.

use crate::common;

use std::path::PathBuf;

use common::{BOTH, Harness, Wire, tool_names, wait_gone, write};
use serde_json::{Value, json};

/// The test server, built into the same target dir as `tern`.
pub(crate) fn test_server() -> PathBuf {
    let tern = PathBuf::from(env!("CARGO_BIN_EXE_tern"));
    let path = tern.with_file_name("tern-test-mcp");
    assert!(path.exists(), "{} is missing: run `cargo build -p tern-test-mcp` first", path.display());
    path
}

/// A reference server installed by `npm ci --prefix support/mcp-servers`.
fn npm_server(bin: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/mcp-servers/node_modules/.bin").join(bin);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix support/mcp-servers` (cargo xtask ci does)",
        path.display()
    );
    path
}

/// The reference `everything` server, configured as `everything`.
fn add_everything(h: &Harness) {
    let command = npm_server("mcp-server-everything").display().to_string();
    add_config(h, &format!("\n[mcp_servers.everything]\ncommand = {command:?}\n"));
}

/// Append `text` to the user config in the harness's TERN_HOME.
fn add_config(h: &Harness, text: &str) {
    let f = h.home.path().join("config.toml");
    let mut s = std::fs::read_to_string(&f).unwrap_or_default();
    s.push_str(text);
    std::fs::write(f, s).unwrap();
}

fn server_section(name: &str, args: &[&str], extra: &str) -> String {
    format!(
        "\n[mcp_servers.{name}]\ncommand = {:?}\nargs = {}\n{extra}\n",
        test_server().display().to_string(),
        serde_json::to_string(args).unwrap()
    )
}

/// A small context window so 200 generated tools cross the 15% threshold.
const SMALL_MODEL: &str = "\n[models.mock]\ncontext_window = 16000\nmax_output = 4096\n";

fn tools_bytes(body: &Value) -> usize {
    body["tools"].to_string().len()
}

#[tokio::test]
async fn deferred_tools_are_searched_activated_and_called() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            &json!({"turns": [
                {"tool_calls": [{"name": "tool_search", "arguments": {"query": "tool 137"}}]},
                {"tool_calls": [{"name": "mcp__big__tool_137", "arguments": {"value": "hi"}}]},
                {"tool_calls": [{"name": "mcp_invoke", "arguments": {"tool": "mcp__big__tool_5", "arguments": {"value": "x"}}}]},
                {"text": "done"}
            ]})
            .to_string(),
        )
        .await;
        add_config(&h, SMALL_MODEL);
        add_config(&h, &server_section("big", &["--tools", "200"], ""));
        let out = h.run(&["-p", "use the big server"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} stderr: {}", out.stderr);
        assert_eq!(out.stdout, "done\n");
        let bodies = h.bodies();
        assert_eq!(bodies.len(), 4, "{wire:?}");

        // First request: built-ins plus the two disclosure tools, no MCP tool.
        let first = tool_names(&bodies[0]);
        assert_eq!(first, [&common::BUILTINS[..], &["mcp_invoke"]].concat(), "{wire:?}");
        // The deferred block names the server before the prompt.
        let messages = bodies[0]["messages"].as_array().unwrap();
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap().to_string();
        assert!(first_user.contains("big (206 tools)"), "{wire:?}: {first_user}");
        assert!(first_user.contains("tool_search"), "{wire:?}: {first_user}");

        // tool_search found tool_137, and it joined the end of the next request.
        let results = h.tool_results(&bodies[1]);
        assert!(results[0].0.contains("mcp__big__tool_137"), "{wire:?}: {:?}", results[0]);
        let second = tool_names(&bodies[1]);
        assert_eq!(second[..first.len()], first[..], "{wire:?}: the prefix must not change");
        let activated = &second[first.len()..];
        assert!(activated.contains(&"mcp__big__tool_137".to_string()), "{wire:?}: {activated:?}");
        assert!(activated.len() <= 5, "top_k defaults to 5: {activated:?}");

        // The direct call and the mcp_invoke call came back.
        let results = h.tool_results(&bodies[2]);
        assert_eq!(results.last().unwrap(), &("tool_137 ok: value=hi".to_string(), false), "{wire:?}");
        let results = h.tool_results(&bodies[3]);
        assert_eq!(results.last().unwrap(), &("tool_5 ok: value=x".to_string(), false), "{wire:?}");
    }
}

#[tokio::test]
async fn a_deferred_tool_called_by_its_exact_name_still_runs() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__big__tool_42", "arguments": {"value": "direct"}},
                            {"name": "mcp__big__tool_43", "arguments": {"wrong": 1}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    add_config(&h, SMALL_MODEL);
    add_config(&h, &server_section("big", &["--tools", "200"], ""));
    let out = h.run(&["-p", "call it"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(!tool_names(&h.bodies()[0]).iter().any(|n| n.starts_with("mcp__")), "the tools were deferred");
    let results = h.tool_results(&h.bodies()[1]);
    assert_eq!(results[0], ("tool_42 ok: value=direct".to_string(), false));
    // Validated against the real schema like any call.
    assert!(results[1].1 && results[1].0.contains("value"), "{:?}", results[1]);
}

#[tokio::test]
async fn first_request_stays_small_with_200_deferred_tools() {
    let script = json!({"turns": [{"text": "ok"}]}).to_string();
    let base = Harness::new(Wire::Anthropic, &script).await;
    add_config(&base, SMALL_MODEL);
    assert_eq!(base.run(&["-p", "hi"]).await.code, Some(0));
    let big = Harness::new(Wire::Anthropic, &script).await;
    add_config(&big, SMALL_MODEL);
    add_config(&big, &server_section("big", &["--tools", "200"], ""));
    let out = big.run(&["-p", "hi"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (b0, b1) = (&base.bodies()[0], &big.bodies()[0]);
    let growth = b1.to_string().len() as i64 - b0.to_string().len() as i64;
    assert!(growth <= 2048, "the first request grew by {growth} bytes with 200 deferred tools");
    // Inline, the same tools would have been many times that.
    let inline = Harness::new(Wire::Anthropic, &script).await;
    add_config(&inline, SMALL_MODEL);
    add_config(&inline, &server_section("big", &["--tools", "200"], "always_load = true"));
    assert_eq!(inline.run(&["-p", "hi"]).await.code, Some(0));
    let inline_tools = tool_names(&inline.bodies()[0]);
    assert_eq!(inline_tools.len(), common::BUILTINS.len() + 200 + 6, "built-ins, generated tools, control tools");
    assert!(tools_bytes(&inline.bodies()[0]) > 20 * 2048);
}

#[tokio::test]
async fn adding_a_server_never_changes_the_built_in_prefix() {
    let script = json!({"turns": [{"text": "ok"}]}).to_string();
    let mut prefixes = Vec::new();
    for servers in [vec![], vec!["a"], vec!["a", "z", "m"]] {
        let h = Harness::new(Wire::Anthropic, &script).await;
        for s in &servers {
            add_config(&h, &server_section(s, &["--tools", "3"], ""));
        }
        let out = h.run(&["-p", "hi"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let body = &h.bodies()[0];
        let tools = body["tools"].as_array().unwrap();
        let names = tool_names(body);
        // MCP tools follow the built-ins, sorted by name.
        let mcp: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__")).collect();
        let mut sorted = mcp.clone();
        sorted.sort();
        assert_eq!(mcp, sorted);
        assert_eq!(names.iter().take_while(|n| !n.starts_with("mcp__")).count(), common::BUILTINS.len());
        // The cache breakpoint marks the last tool, wherever the list ends; the
        // workspace is a different temp dir per run.
        let mut builtins = tools[..8].to_vec();
        for t in &mut builtins {
            t.as_object_mut().unwrap().remove("cache_control");
        }
        let workspace = h.workspace.path().canonicalize().unwrap().display().to_string();
        prefixes
            .push((serde_json::to_string(&builtins).unwrap(), body["system"].to_string().replace(&workspace, "WS")));
    }
    for w in prefixes.windows(2) {
        pretty_assertions::assert_eq!(w[0], w[1], "built-in tools or system prompt changed with MCP servers");
    }
}

#[tokio::test]
async fn a_crashed_server_gives_an_error_result_and_restarts_on_next_use() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            &json!({"turns": [
                {"tool_calls": [{"name": "mcp__small__crash", "arguments": {}}]},
                {"tool_calls": [{"name": "mcp__small__echo", "arguments": {"text": "back again"}}]},
                {"text": "recovered"}
            ]})
            .to_string(),
        )
        .await;
        add_config(&h, &server_section("small", &["--tools", "2"], ""));
        let out = h.run(&["-p", "crash it"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} stderr: {}", out.stderr);
        assert_eq!(out.stdout, "recovered\n");
        let bodies = h.bodies();
        let (text, is_error) = h.tool_results(&bodies[1]).pop().unwrap();
        assert!(text.contains("small"), "{wire:?}: the error names the server: {text}");
        if wire == Wire::Anthropic {
            assert!(is_error);
        }
        let (text, _) = h.tool_results(&bodies[2]).pop().unwrap();
        assert!(text.contains("back again"), "{wire:?}: {text}");
    }
}

#[tokio::test]
async fn a_hanging_tool_times_out_and_the_run_continues() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__slow__hang", "arguments": {}}]},
            {"text": "moved on"}
        ]})
        .to_string(),
    )
    .await;
    add_config(&h, &server_section("slow", &["--tools", "1"], "tool_timeout_sec = 0.5"));
    let out = h.run(&["-p", "hang"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "moved on\n");
    let (text, is_error) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(is_error && text.contains("slow") && text.contains("500 ms"), "{text}");
    assert!(wait_gone(&format!("{} --tools 1", test_server().display())).await.is_empty(), "server left running");
}

#[tokio::test]
async fn tools_explain_and_mcp_list_show_every_decision() {
    let h = Harness::new(Wire::Anthropic, "{\"turns\": []}").await;
    add_config(&h, SMALL_MODEL);
    add_config(&h, &server_section("big", &["--tools", "200", "--stderr-noise"], ""));
    add_config(&h, "\n[mcp_servers.broken]\ncommand = \"/nonexistent/tern-no-such-server\"\n");
    add_config(&h, "\n[mcp_servers.off]\ncommand = \"true\"\nenabled = false\n");

    let out = h.run(&["tools", "--explain", "--disallowed-tools", "ls"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(!out.stderr.contains("noise"), "server stderr leaked to the screen: {}", out.stderr);
    let text = &out.stdout;
    for needle in ["tool_search", "mcp_invoke", "mcp__big__tool_137", "ls", "disallowed", "deferred", "16000"] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }

    let out = h.run(&["tools", "--json", "--role", "explore"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = report["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"read") && !names.contains(&"write") && !names.contains(&"edit"), "{names:?}");
    assert!(!names.contains(&"todo_write"), "a subagent never gets todo_write: {names:?}");
    let removed = report["removed"].as_array().unwrap();
    assert!(removed.iter().any(|r| r["name"] == "write" && r["layer"] == "role_cap"), "{removed:?}");

    let out = h.run(&["mcp", "list"]).await;
    assert_eq!(out.code, Some(1), "a failed server makes `mcp list` exit 1; stdout: {}", out.stdout);
    let line = |name: &str| out.stdout.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string();
    assert!(line("big").contains("connected") && line("big").contains("206"), "{}", out.stdout);
    assert!(line("broken").contains("failed"), "{}", out.stdout);
    assert!(line("off").contains("disabled"), "{}", out.stdout);
    let log = std::fs::read_to_string(h.home.path().join("logs/tern.log")).unwrap();
    assert!(log.contains("[big]") && log.contains("noise"), "server stderr goes to the log: {log}");
}

#[tokio::test]
async fn mcp_json_and_mcp_config_files_are_read() {
    let h = Harness::new(Wire::Anthropic, "{\"turns\": []}").await;
    let server = test_server().display().to_string();
    write(
        &h.path(".mcp.json"),
        &json!({"mcpServers": {"proj": {"command": server, "args": ["--tools", "2"]}}}).to_string(),
    );
    let extra = h.home.path().join("extra.json");
    write(
        &extra,
        &json!({"mcpServers": {"extra": {"type": "stdio", "command": server, "args": ["--tools", "1"]}}}).to_string(),
    );
    // Untrusted: the project's .mcp.json is not started, and the warning says how to trust.
    let out = h.run(&["mcp", "list", "--json", "--mcp-config", extra.to_str().unwrap()]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["extra"], "{list}");
    assert!(
        out.stderr.contains("did not start MCP server(s) proj") && out.stderr.contains("tern trust"),
        "{}",
        out.stderr
    );
    let out = h.run(&["mcp", "list", "--json", "--trust", "--mcp-config", extra.to_str().unwrap()]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["extra", "proj"]);
    assert!(list.as_array().unwrap().iter().all(|s| s["state"] == "connected"), "{list}");
}

#[tokio::test]
async fn reference_servers_from_npm_work_end_to_end() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [
                {"name": "mcp__everything__echo", "arguments": {"message": "hello from tern"}},
                {"name": "mcp__fs__read_text_file", "arguments": {"path": "notes.txt"}}
            ]},
            {"text": "both answered"}
        ]})
        .to_string(),
    )
    .await;
    write(&h.path("notes.txt"), "filesystem server content\n");
    // The server runs in the workspace (the default cwd), so a relative path works.
    let root = h.workspace.path().canonicalize().unwrap();
    add_config(
        &h,
        &format!(
            "\n[mcp_servers.everything]\ncommand = {:?}\n\n[mcp_servers.fs]\ncommand = {:?}\nargs = [{:?}]\n",
            npm_server("mcp-server-everything").display().to_string(),
            npm_server("mcp-server-filesystem").display().to_string(),
            root.display().to_string()
        ),
    );
    let out = h.run(&["-p", "call them"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "both answered\n");
    let results = h.tool_results(&h.bodies()[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].0.contains("hello from tern") && !results[0].1, "{:?}", results[0]);
    assert!(results[1].0.contains("filesystem server content") && !results[1].1, "{:?}", results[1]);
}

#[tokio::test]
async fn mcp_tools_need_an_allow_rule_even_through_mcp_invoke() {
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "mcp__small__echo", "arguments": {"text": "direct"}},
                        {"name": "mcp_invoke", "arguments": {"tool": "mcp__small__echo", "arguments": {"text": "wrapped"}}}]},
        {"text": "done"}
    ]})
    .to_string();
    // No rule: both refused (mcp_invoke is judged as the tool it invokes).
    let mut h = Harness::new(Wire::Anthropic, &turns).await;
    h.mode = None;
    add_config(&h, &server_section("small", &["--tools", "1"], ""));
    add_config(&h, "\n[tool_disclosure]\nthreshold_pct = 0.0\n");
    let out = h.run(&["-p", "echo", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let result: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    let denied: Vec<&str> =
        result["permission_denials"].as_array().unwrap().iter().map(|d| d["tool_name"].as_str().unwrap()).collect();
    assert_eq!(denied, ["mcp__small__echo", "mcp_invoke"]);
    assert!(out.stderr.contains("--allowed-tools 'mcp__small__echo'"), "{}", out.stderr);

    // A server-wide allow rule lets both through.
    let mut h = Harness::new(Wire::Anthropic, &turns).await;
    h.mode = None;
    add_config(&h, &server_section("small", &["--tools", "1"], ""));
    add_config(&h, "\n[tool_disclosure]\nthreshold_pct = 0.0\n");
    let out = h.run(&["-p", "echo", "--allowed-tools", "mcp__small"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert_eq!(results, [("direct".to_string(), false), ("wrapped".to_string(), false)]);
}

#[tokio::test]
async fn hooks_see_the_tool_mcp_invoke_runs() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp_invoke", "arguments": {"tool": "echo", "arguments": {"text": "wrapped"}}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    add_config(&h, &server_section("small", &["--tools", "1"], ""));
    add_config(&h, "\n[tool_disclosure]\nthreshold_pct = 0.0\n");
    add_config(
        &h,
        "\n[[hooks.pre_tool_use]]\nmatcher = \"mcp__small__.*\"\ncommand = \"echo no echoes today >&2; exit 2\"\n",
    );
    let out = h.run(&["-p", "echo"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let (text, is_error) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(is_error && text.contains("no echoes today"), "the bare name resolved and the hook fired: {text}");
}

#[tokio::test]
async fn a_server_flooding_stderr_cannot_fill_the_disk() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    // A "server" that floods its stderr and never answers.
    let config = "[retry]\nbase_delay_ms = 1\n[mcp_servers.noisy]\ncommand = \"sh\"\n\
                  args = [\"-c\", \"yes tern-flood-test-line-with-some-length >&2\"]\nstartup_timeout_sec = 3\n";
    std::fs::write(h.home.path().join("config.toml"), config).unwrap();
    let out = h.run(&["mcp", "list", "--json"]).await;
    assert!(out.stdout.contains("noisy"), "{}", out.stdout);
    let logs = h.home.path().join("logs");
    let total: u64 = std::fs::read_dir(&logs).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(total > 0, "the flood was logged");
    assert!(total <= 2 * tern_mcp_log_cap(), "{total} bytes of logs");
    assert_eq!(wait_gone("tern-flood-test-line").await, Vec::<u32>::new(), "the server is stopped");
}

/// The MCP log's cap (`tern_mcp::server_log::MAX_LOG_BYTES`), 16 MiB.
fn tern_mcp_log_cap() -> u64 {
    16 * 1024 * 1024
}

#[tokio::test]
async fn mcp_json_keys_tern_knows_apply_and_others_are_named() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let config = json!({"mcpServers": {"calc": {
        "command": test_server().display().to_string(), "args": ["--tools", "2"],
        "tool_timeout_sec": 5, "enabled": false, "alwaysAllow": ["tool_0"]
    }}})
    .to_string();
    let out = h.run(&["mcp", "list", "--json", "--mcp-config", &config]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let warning = out.stderr.lines().find(|l| l.contains("ignored unknown key")).expect("a warning");
    let named = warning.split("(known").next().unwrap();
    assert!(named.contains("alwaysAllow") && !named.contains("tool_timeout_sec"), "{warning}");
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(list[0]["state"], "disabled", "`enabled` applies: {list}");
}

#[tokio::test]
async fn a_slow_server_does_not_hold_up_the_first_request_and_joins_when_ready() {
    // The server takes 6 s to answer; a session waits 3 s at most. The first
    // request goes without its tools (so it was not held up for them); the
    // model runs short bash calls until a request lists the server's tools,
    // then calls one.
    let mut turns = vec![
        json!({"when_request_contains": "a 1x1 red pixel", "text": "done"}),
        json!({"when_request_contains": "mcp__late__image", "tool_calls": [{"name": "mcp__late__image", "arguments": {}}]}),
    ];
    turns.extend((0..45).map(|_| json!({"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 0.3"}}]})));
    let h = Harness::new(Wire::Anthropic, &json!({ "turns": turns }).to_string()).await;
    add_config(&h, &server_section("late", &["--tools", "2", "--start-delay-ms", "6000"], ""));
    let out = h.run(&["-p", "go", "--max-turns", "60"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    let bodies = h.bodies();
    let has_late = |b: &Value| b["tools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__late__image");
    assert!(!has_late(&bodies[0]), "the first request waited for the server");
    assert!(has_late(bodies.last().unwrap()), "the server's tools never joined");
    // It joined while the session ran, not at once and not at the end.
    let waited = bodies.iter().take_while(|b| !has_late(b)).count();
    assert!((2..45).contains(&waited), "{waited} requests before it joined");
}

#[tokio::test]
async fn mcp_list_waits_for_a_slow_server() {
    let h = Harness::new(Wire::Anthropic, "{\"turns\": []}").await;
    add_config(&h, &server_section("late", &["--tools", "2", "--start-delay-ms", "4000"], ""));
    let out = h.run(&["mcp", "list"]).await;
    assert_eq!(out.code, Some(0), "stdout: {} stderr: {}", out.stdout, out.stderr);
    let line = out.stdout.lines().find(|l| l.starts_with("late")).unwrap_or_default();
    assert!(line.contains("connected") && line.contains(" 2 "), "{}", out.stdout);
}

#[tokio::test]
async fn a_server_of_a_transport_tern_does_not_speak_fails_alone() {
    // A shared `.mcp.json` written for other clients: one legacy SSE server, one tern can run.
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[{"tool_calls":[{"name":"mcp__calc__tool_0","arguments":{"value":"x"}}]},{"text":"used calc"}]}"#,
    )
    .await;
    let config = json!({"mcpServers": {
        "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
        "calc": {"command": test_server().display().to_string(), "args": ["--tools", "2"]}
    }})
    .to_string();
    let out = h.run(&["mcp", "list", "--json", "--mcp-config", &config]).await;
    assert_ne!(out.code, Some(2), "not a configuration error: {}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let old = list.as_array().unwrap().iter().find(|s| s["name"] == "old").expect("listed");
    assert!(old.to_string().contains("legacy SSE transport"), "{old}");
    let out = h.run(&["-p", "use calc", "--mcp-config", &config, "--allowed-tools", "mcp__calc"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("used calc"), "{}", out.stdout);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(!results[0].1, "the other server's tool ran: {results:?}");
    assert!(out.stderr.contains("old") && out.stderr.contains("legacy SSE"), "said once: {}", out.stderr);
}

#[tokio::test]
async fn a_server_started_without_folders_works_in_the_sessions_roots() {
    // The reference filesystem server, given no directory, allows what the client's
    // `roots/list` names; a client without roots gets every path refused.
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__fs__read_text_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "read it"}
        ]})
        .to_string(),
    )
    .await;
    write(&h.path("notes.txt"), "content found through roots\n");
    add_config(
        &h,
        &format!("\n[mcp_servers.fs]\ncommand = {:?}\n", npm_server("mcp-server-filesystem").display().to_string()),
    );
    let out = h.run(&["-p", "read it", "--allowed-tools", "mcp__fs"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("content found through roots") && !results[0].1, "{:?}", results[0]);
    // A folder added with --add-dir is a root too.
    let other = tempfile::tempdir().unwrap();
    let file = other.path().canonicalize().unwrap().join("elsewhere.txt");
    write(&file, "content from the added folder\n");
    let h2 = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__fs__read_text_file", "arguments": {"path": file.display().to_string()}}]},
            {"text": "read it"}
        ]})
        .to_string(),
    )
    .await;
    add_config(
        &h2,
        &format!("\n[mcp_servers.fs]\ncommand = {:?}\n", npm_server("mcp-server-filesystem").display().to_string()),
    );
    let dir = other.path().display().to_string();
    let out = h2.run(&["-p", "read it", "--allowed-tools", "mcp__fs", "--add-dir", &dir]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h2.tool_results(&h2.bodies()[1]);
    assert!(results[0].0.contains("content from the added folder") && !results[0].1, "{:?}", results[0]);
}

#[tokio::test]
async fn strict_mcp_config_starts_only_the_servers_it_was_given() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    add_config(&h, &server_section("from_config", &["--tools", "1"], ""));
    let given =
        json!({"mcpServers": {"given": {"command": test_server().display().to_string(), "args": ["--tools", "1"]}}})
            .to_string();
    let names = |out: &common::Output| -> Vec<String> {
        let list: Value = serde_json::from_str(&out.stdout).unwrap();
        list.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_string()).collect()
    };
    let out = h.run(&["mcp", "list", "--json", "--mcp-config", &given]).await;
    assert_eq!(names(&out), ["from_config", "given"], "{}", out.stderr);
    let out = h.run(&["mcp", "list", "--json", "--mcp-config", &given, "--strict-mcp-config"]).await;
    assert_eq!(names(&out), ["given"], "{}", out.stderr);
}

#[tokio::test]
async fn a_servers_prompts_are_commands_and_its_resources_are_tools() {
    let uri = "demo://resource/static/document/architecture.md";
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"when_request_contains": "weather in Paris, Texas", "text": "sunny"},
            {"when_request_contains": "Static document file exposed", "text": "read them"},
            {"when_request_contains": "read both", "tool_calls": [
                {"name": "mcp__everything__list_resources", "arguments": {}},
                {"name": "mcp__everything__read_resource", "arguments": {"uri": uri}}
            ]}
        ]})
        .to_string(),
    )
    .await;
    add_everything(&h);
    // `/mcp__server__prompt args`: the words fill its arguments in order; its text is the prompt.
    let out = h.run(&["-p", "/mcp__everything__args-prompt Paris Texas"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "sunny\n");
    // A missing required argument is named, and nothing is sent.
    let sent = h.bodies().len();
    let out = h.run(&["-p", "/mcp__everything__args-prompt"]).await;
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("`city` is required"), "{}", out.stderr);
    assert_eq!(h.bodies().len(), sent);
    // Its resources: listed and read through two tools of the server.
    let out = h.run(&["-p", "read both"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let body = h.bodies().last().unwrap().clone();
    let results = h.tool_results(&body);
    assert!(results[0].0.contains(uri) && !results[0].1, "{:?}", results[0]);
    assert!(!results[1].1 && results[1].0.len() > 100, "{:?}", results[1]);
    // The prompts are listed with the other slash commands.
    let out = h.run(&["-p", "x", "--output-format", "stream-json"]).await;
    let init = &out.json_lines()[0];
    assert!(init["slash_commands"].as_array().unwrap().iter().any(|c| c == "mcp__everything__simple-prompt"), "{init}");
}

#[tokio::test]
async fn a_form_nobody_can_answer_is_declined() {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/python-sdk/.venv/bin/python");
    if !python.exists() {
        eprintln!(
            "skipped: the Python MCP SDK is not installed in {} (`cargo xtask ci` installs it)",
            python.display()
        );
        return;
    }
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/python-sdk/form_server.py");
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [{"tool_calls": [{"name": "mcp__forms__book", "arguments": {}}]}, {"text": "done"}]})
            .to_string(),
    )
    .await;
    add_config(
        &h,
        &format!(
            "\n[mcp_servers.forms]\ncommand = {:?}\nargs = [{:?}]\n",
            python.display().to_string(),
            server.display().to_string()
        ),
    );
    let out = h.run(&["-p", "book"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("not booked: decline"), "{results:?}");
}

#[tokio::test]
async fn a_servers_progress_shows_as_the_call_runs() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__everything__trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    add_everything(&h);
    let out = h.run(&["-p", "run it", "--output-format", "tern-events"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let updates: Vec<String> =
        out.json_lines().iter().filter(|l| l["type"] == "tool_execution_update").map(|l| l.to_string()).collect();
    assert!(updates.iter().any(|u| u.contains("progress 3 of 3")), "{updates:?}");
}
