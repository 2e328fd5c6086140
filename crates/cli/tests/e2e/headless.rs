//! The real `tern -p` binary against `tern-mock-llm`, in both wire formats.

use crate::common;

use common::{BOTH, Harness, Wire, wait_gone, write};
use pretty_assertions::assert_eq;
use serde_json::json;

fn script(v: serde_json::Value) -> String {
    v.to_string()
}

#[tokio::test]
async fn tool_call_runs_and_its_output_reaches_the_next_request() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            &script(json!({"turns": [
                {"text": "Reading.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}},
                                                      {"name": "bash", "arguments": {"command": "echo from-bash-$((40+2))"}}]},
                {"text": "The notes say hello."}
            ]})),
        )
        .await;
        write(&h.path("notes.txt"), "hello\nworld\n");
        let out = h.run(&["-p", "what do the notes say?"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} stderr: {}", out.stderr);
        assert_eq!(out.stdout, "The notes say hello.\n");
        let bodies = h.bodies();
        assert_eq!(bodies.len(), 2, "{wire:?}");
        let results = h.tool_results(&bodies[1]);
        assert_eq!(results.len(), 2, "{wire:?}");
        assert_eq!(results[0], ("     1\thello\n     2\tworld".to_string(), false), "{wire:?}");
        assert!(results[1].0.contains("from-bash-42\n[Exit code: 0]"), "{wire:?}: {:?}", results[1]);
        // The first request offers the tools.
        let first = &bodies[0];
        let tools: Vec<String> = first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().or(t["function"]["name"].as_str()).unwrap().to_string())
            .collect();
        assert_eq!(tools, common::BUILTINS, "{wire:?}");
        assert_eq!(first["stream"], true);
    }
}

#[tokio::test]
async fn requests_follow_each_wire_protocol() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    assert_eq!(h.run(&["-p", "hi"]).await.code, Some(0));
    let r = &h.server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers.get("x-api-key").map(String::as_str), Some("test-key"));
    assert_eq!(r.headers.get("anthropic-version").map(String::as_str), Some("2023-06-01"));
    assert!(r.body["max_tokens"].as_u64().unwrap() > 0);
    // The tools describe themselves; the system prompt names only those waiting behind tool_search.
    let system = r.body["system"][0]["text"].as_str().unwrap();
    assert!(system.contains("# More tools") && !system.contains("\n- read:"), "{system}");
    assert_eq!(
        r.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );

    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"ok"}]}"#).await;
    assert_eq!(h.run(&["-p", "hi"]).await.code, Some(0));
    let r = &h.server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers.get("authorization").map(String::as_str), Some("Bearer test-key"));
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(r.body["messages"][0]["role"], "system");
    assert_eq!(r.body["messages"][1], json!({"role": "user", "content": "hi"}));
}

#[tokio::test]
async fn malformed_tool_arguments_get_an_error_result_and_the_run_continues() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            &script(json!({"turns": [
                {"tool_calls": [{"name": "read", "raw_arguments": "{\"path\": \"a.txt\""}]},
                {"tool_calls": [{"name": "read", "arguments": {"path": 42}}]},
                {"text": "recovered"}
            ]})),
        )
        .await;
        let out = h.run(&["-p", "go"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} {}", out.stderr);
        assert_eq!(out.stdout, "recovered\n");
        let bodies = h.bodies();
        let first = h.tool_results(&bodies[1]);
        assert_eq!(first.len(), 1);
        assert!(first[0].1, "{wire:?} must be an error: {:?}", first[0]);
        assert!(first[0].0.contains("not valid JSON"), "{wire:?}: {}", first[0].0);
        let second = h.tool_results(&bodies[2]);
        assert!(second[1].1 && second[1].0.contains("Invalid arguments for tool `read`"), "{wire:?}: {:?}", second[1]);
        assert!(second[1].0.contains("/path"), "names the field: {}", second[1].0);
        // The call that could not run still starts and ends in the events, with what was received.
        let out = h.run(&["-p", "go", "--output-format", "tern-events"]).await;
        let lines = out.json_lines();
        let start = lines.iter().find(|l| l["type"] == "tool_call_start").expect("a start");
        assert_eq!(start["input"]["invalid_arguments"], "{\"path\": \"a.txt\"", "{wire:?}: {start}");
        let end = lines.iter().find(|l| l["type"] == "tool_execution_end" && l["id"] == start["id"]).expect("an end");
        assert_eq!(end["is_error"], true);
    }
}

#[tokio::test]
async fn rate_limit_is_retried_with_a_retry_event() {
    for wire in BOTH {
        let h = Harness::new(wire, r#"{"turns":[{"faults":[{"status":429,"retry_after":"0"}],"text":"after retry"}]}"#)
            .await;
        let out = h.run(&["-p", "hi", "--output-format", "tern-events"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} {}", out.stderr);
        let retries = out.events_of_type("retry");
        assert_eq!(retries.len(), 1, "{wire:?}");
        assert_eq!(retries[0]["attempt"], 2);
        assert!(retries[0]["error"].as_str().unwrap().contains("429"));
        assert_eq!(out.events_of_type("result")[0]["result"], "after retry");
        assert_eq!(h.server.requests().len(), 2);
    }
}

#[tokio::test]
async fn unauthorized_fails_at_once_with_exit_1_and_a_clear_message() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            r#"{"turns":[{"faults":[{"status":401,"message":"invalid x-api-key","repeat":true}]}]}"#,
        )
        .await;
        let out = h.run(&["-p", "hi"]).await;
        assert_eq!(out.code, Some(1), "{wire:?}");
        assert_eq!(out.stdout, "");
        assert!(out.stderr.contains("HTTP 401"), "{}", out.stderr);
        assert!(out.stderr.contains("invalid x-api-key"), "{}", out.stderr);
        assert!(out.stderr.contains("check the API key"), "{}", out.stderr);
        assert_eq!(h.server.requests().len(), 1, "401 is not retried");
    }
}

#[tokio::test]
async fn a_cut_stream_is_retried_and_a_persistent_one_fails_cleanly() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            r#"{"turns":[{"faults":[{"cut_after_events":3}],"text":"a long enough answer to be split"}]}"#,
        )
        .await;
        let out = h.run(&["-p", "hi", "--output-format", "tern-events"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} {}", out.stderr);
        let retry = &out.events_of_type("retry")[0];
        assert!(retry["error"].as_str().unwrap().contains("ended before"), "{retry}");
        assert_eq!(out.events_of_type("result")[0]["result"], "a long enough answer to be split");

        let h =
            Harness::new(wire, r#"{"turns":[{"faults":[{"cut_after_events":2,"repeat":true}],"text":"never whole"}]}"#)
                .await;
        let out = h.run(&["-p", "hi", "--output-format", "json"]).await;
        assert_eq!(out.code, Some(1), "{wire:?}");
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        let result = &out.json_lines()[0];
        assert_eq!(result["is_error"], true);
        assert_eq!(result["subtype"], "error_during_execution");
        assert!(result["errors"][0].as_str().unwrap().contains("ended before"), "{result}");
        assert_eq!(h.server.requests().len(), 4, "default policy: 4 attempts");
    }
}

#[tokio::test]
async fn malformed_chunks_and_stream_errors_are_retried() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            r#"{"turns":[{"faults":[{"malformed_after_events":2},{"stream_error_after_events":3}],"text":"third time lucky"}]}"#,
        )
        .await;
        let out = h.run(&["-p", "hi", "--output-format", "tern-events"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} {}", out.stderr);
        assert_eq!(out.events_of_type("retry").len(), 2);
        assert_eq!(out.events_of_type("result")[0]["result"], "third time lucky");
    }
}

#[tokio::test]
async fn max_turns_is_honoured() {
    for wire in BOTH {
        let h = Harness::new(
            wire,
            r#"{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},{"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},{"text":"done"}]}"#,
        )
        .await;
        let out = h.run(&["-p", "hi", "--max-turns", "2", "--output-format", "json"]).await;
        assert_eq!(out.code, Some(1), "{wire:?}");
        let r = &out.json_lines()[0];
        assert_eq!(r["subtype"], "error_max_turns");
        assert_eq!(r["num_turns"], 2);
        assert_eq!(h.server.requests().len(), 2);
        assert!(out.stderr.contains("--max-turns"), "{}", out.stderr);
    }
}

#[tokio::test]
async fn stream_json_is_one_object_per_line_from_init_to_result() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[{"thinking":"hmm","text":"Let me check.","tool_calls":[{"name":"bash","arguments":{"command":"echo out"}}]},{"text":"Done."}]}"#,
    )
    .await;
    let out = h.run(&["-p", "hi", "--output-format", "tern-events"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines = out.json_lines();
    assert_eq!(lines[0]["type"], "system");
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines[0]["tools"], json!(common::BUILTINS));
    assert_eq!(lines[0]["model"], "mock");
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let mut kinds = types.clone();
    kinds.dedup();
    assert_eq!(
        kinds,
        vec![
            "system",
            "prompt_started",
            "turn_start",
            "thinking_delta",
            "text_delta",
            "tool_input_start",
            "tool_input_delta",
            "assistant_message",
            "tool_call_start",
            "tool_execution_update",
            "tool_execution_end",
            "turn_end",
            "turn_start",
            "text_delta",
            "assistant_message",
            "turn_end",
            "agent_end",
            "usage_updated",
            "result"
        ]
    );
    let result = lines.last().unwrap();
    for key in
        ["result", "is_error", "num_turns", "duration_ms", "usage", "total_cost_usd", "session_id", "stop_reason"]
    {
        assert!(result.get(key).is_some(), "result lacks {key}: {result}");
    }
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["terminal_reason"], "completed");
    assert_eq!(result["session_id"], lines[0]["session_id"]);
    // The session log exists and holds the conversation.
    let log = h.home.path().join("sessions").join(format!("{}.jsonl", result["session_id"].as_str().unwrap()));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().any(|l| l.contains("\"tool_result\"")), "{text}");
}

#[tokio::test]
async fn json_output_is_one_result_object() {
    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"fine","usage":{"input_tokens":100,"output_tokens":7}}]}"#)
        .await;
    let out = h.run(&["-p", "hi", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0));
    let lines = out.json_lines();
    assert_eq!(lines.len(), 1);
    let r = &lines[0];
    assert_eq!(r["type"], "result");
    assert_eq!(r["result"], "fine");
    assert_eq!(r["is_error"], false);
    assert_eq!(
        r["usage"],
        json!({"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 7,
               "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}})
    );
}

#[tokio::test]
async fn prompt_from_stdin_and_usage_errors() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"piped ok"}]}"#).await;
    let mut cmd = h.command(&["-p"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"prompt from a pipe").await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "piped ok\n");
    let body = &h.bodies()[0];
    assert_eq!(body["messages"][0]["content"][0]["text"], "prompt from a pipe");

    // Empty stdin (not a terminal): a usage error, not a hang.
    let out = h.run(&["-p"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("prompt is empty"), "{}", out.stderr);

    // Bad flag value.
    let out = h.run(&["-p", "x", "--output-format", "yaml"]).await;
    assert_eq!(out.code, Some(2));
}

#[tokio::test]
async fn missing_key_is_a_one_line_error_naming_the_variable() {
    let home = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern"))
        .args(["-p", "hi", "--provider", "anthropic"])
        .env("TERN_HOME", home.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");

    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern"))
        .args(["-p", "hi", "--provider", "openai"])
        .env("TERN_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPENAI_API_KEY"));
}

#[tokio::test]
async fn bad_config_is_a_usage_error_naming_the_file() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"x"}]}"#).await;
    write(&h.path(".tern/config.toml"), "max_turns = \"many\"\n");
    // Trusted: a mistake in the project config is the person's to fix.
    let out = h.run(&["-p", "hi", "--trust"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains(".tern/config.toml"), "{}", out.stderr);
    // Untrusted: a repository cannot stop tern from starting; the config is ignored and said so.
    let out = h.run(&["-p", "hi"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("ignored the project config") && out.stderr.contains("max_turns"), "{}", out.stderr);
    // The user config is still an error.
    write(&h.home.path().join("config.toml"), "max_turns = \"many\"\n");
    assert_eq!(h.run(&["-p", "hi"]).await.code, Some(2));
}

#[tokio::test]
async fn bash_timeout_leaves_no_process_behind() {
    for wire in BOTH {
        let marker = if wire == Wire::Anthropic { "4091.5" } else { "4092.5" };
        let cmd = format!("sleep {marker} & sleep {marker}; echo never");
        let h = Harness::new(
            wire,
            &script(json!({"turns": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": cmd, "timeout": 300}}]},
                {"text": "it timed out"}
            ]})),
        )
        .await;
        let out = h.run(&["-p", "run it"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let results = h.tool_results(&h.bodies()[1]);
        assert!(results[0].0.contains("Timed out after 300 ms"), "{:?}", results[0]);
        assert!(!results[0].0.contains("never"));
        assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new());
    }
}

#[tokio::test]
async fn sigint_cancels_the_run_kills_tools_and_exits_130() {
    use tokio::io::AsyncBufReadExt;
    let marker = "4093.5";
    let h = Harness::new(
        Wire::Anthropic,
        &script(json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("echo started; sleep {marker} & sleep {marker}")}}]},
            {"text": "unreachable"}
        ]})),
    )
    .await;
    let mut child = h.command(&["-p", "go", "--output-format", "tern-events"]).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    // Wait until the command has visibly started, then interrupt.
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let started = v["type"] == "tool_execution_update" && v["text"].as_str().unwrap_or("").contains("started");
        seen.push(v);
        if started {
            break;
        }
    }
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(130));
    let end = seen.iter().find(|v| v["type"] == "tool_execution_end").expect("tool end event");
    assert!(end["content"][0]["text"].as_str().unwrap().contains("Interrupted"), "{end}");
    let result = seen.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["terminal_reason"], "aborted");
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new());
    assert_eq!(h.server.requests().len(), 1, "no request after the interrupt");
}

#[tokio::test]
async fn sessions_are_listed_per_folder_newest_first() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"}]}"#).await;
    assert_eq!(h.run(&["-p", "first   question"]).await.code, Some(0));
    assert_eq!(h.run(&["-p", "second question"]).await.code, Some(0));
    let out = h.run(&["sessions", "list", "--json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let prompts: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["first_prompt"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["second question", "first question"]);
    let out = h.run(&["sessions", "list"]).await;
    assert!(out.stdout.contains("second question") && out.stdout.contains("mock"), "{}", out.stdout);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = h.run(&["sessions", "list", "--cwd", elsewhere.path().to_str().unwrap()]).await;
    assert!(out.stdout.starts_with("No sessions"), "{}", out.stdout);
    let out = h.run(&["sessions", "list", "--all", "--cwd", elsewhere.path().to_str().unwrap()]).await;
    assert!(out.stdout.contains("first question"), "{}", out.stdout);
}

/// An endless stream is cut by its size and retried; a server that stalls
/// (no response, headers and no body, only keep-alives) is cut at its limit
/// and not tried again, so the run ends within the limit, naming the setting.
#[tokio::test]
async fn endless_streams_are_cut_by_size_keepalives_and_silence() {
    let cases = [
        // (fault, what the error says, requests made)
        (json!({"endless_text_after_events": 3, "repeat": true}), "larger than", 2),
        (json!({"pings_after_events": 1, "repeat": true}), "keep-alives", 1),
        (json!({"stall_after_events": 0, "repeat": true}), "no data", 1),
        (json!({"delay_ms": 60_000, "repeat": true}), "no response", 1),
    ];
    for (fault, says, requests) in cases {
        let h =
            Harness::new(Wire::Anthropic, &json!({"turns": [{"faults": [fault], "text": "never"}]}).to_string()).await;
        let config = "max_tokens = 100\n[retry]\nmax_attempts = 2\nbase_delay_ms = 1\nmax_delay_ms = 5\n\
                      first_byte_timeout_secs = 1\nidle_timeout_secs = 1\n";
        std::fs::write(h.home.path().join("config.toml"), config).unwrap();
        let started = std::time::Instant::now();
        let out = h.run(&["-p", "hi", "--output-format", "json"]).await;
        assert_eq!(out.code, Some(1), "{says}: {}", out.stderr);
        let r = &out.json_lines()[0];
        let error = r["errors"][0].as_str().unwrap();
        assert!(error.contains(says), "{says}: {r}");
        assert_eq!(h.server.requests().len(), requests, "{says}: {r}");
        if requests == 1 {
            assert!(error.contains("_timeout_secs"), "the setting to raise is named: {error}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "{says}: {:?}", started.elapsed());
    }
}

/// A local server that is slow to begin (a model reading a long prompt) is
/// waited for past the remote default, once, and `--verbose` says what the
/// wait is.
#[tokio::test]
async fn verbose_says_the_model_is_reading_the_prompt_while_a_local_server_is_silent() {
    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"read it","faults":[{"delay_ms":1500}]}]}"#).await;
    let out = h.run(&["-p", "hi", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "read it");
    let line =
        out.stderr.lines().find(|l| l.contains("the model is reading")).unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(line.contains(" tokens… 1 s"), "{line}");
    assert_eq!(h.server.requests().len(), 1);
}

/// Start `tern -p` on the harness's script (a bash call printing `started`);
/// returns once the command printed it.
async fn run_until_started(h: &Harness) -> tokio::process::Child {
    use tokio::io::AsyncBufReadExt;
    let mut child = h.command(&["-p", "go", "--output-format", "tern-events"]).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "tool_execution_update" && v["text"].as_str().unwrap_or("").contains("started") {
            break;
        }
    }
    // Keep reading so tern never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

#[tokio::test]
async fn a_second_ctrl_c_still_kills_a_command_that_ignores_sigterm() {
    let marker = "4111.25";
    let command = format!("trap '' TERM; echo started; sleep {marker}; sleep {marker}");
    let h = Harness::new(
        Wire::Anthropic,
        &script(
            json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "x"}]}),
        ),
    )
    .await;
    let mut child = run_until_started(&h).await;
    assert!(!common::wait_present(&format!("sleep {marker}")).await.is_empty());
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling our own child, twice, 0.2 s apart, as a person pressing Ctrl-C twice
    // (the pause is the person's, not a wait for tern: two signals at once may arrive as one).
    unsafe { libc::kill(pid, libc::SIGINT) };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new(), "nothing left running");
}

#[tokio::test]
async fn a_command_dies_with_tern_when_tern_is_killed() {
    let marker = "4127.75";
    let command = format!("echo started; exec sleep {marker}");
    let h = Harness::new(
        Wire::Anthropic,
        &script(
            json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "x"}]}),
        ),
    )
    .await;
    let mut child = run_until_started(&h).await;
    assert!(!common::wait_present(&format!("sleep {marker}")).await.is_empty());
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait().await;
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new(), "the command died with tern");
}

/// With the sandbox off (the person's choice: commands run as they would
/// run them, no namespaces, so `kill PID`, `sudo` and set-uid tools work),
/// a kill -9 of tern ends the shell (its parent-death signal) but not what
/// the shell left in the background: the documented price of `off`. The
/// children are found by the pids the command wrote, and ended here.
#[tokio::test]
async fn with_the_sandbox_off_a_killed_tern_ends_the_shell_but_not_its_background_children() {
    let command = "sleep 4127.91 & echo $! > pids; setsid sleep 4127.92 & echo $! >> pids; echo $$ >> pids; \
                   echo started; wait";
    let mut h = Harness::new(
        Wire::Anthropic,
        &script(
            json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "x"}]}),
        ),
    )
    .await;
    h.mode = None;
    std::fs::write(
        h.home.path().join("config.toml"),
        "[retry]\nbase_delay_ms = 1\n[sandbox]\nmode = \"off\"\n[permissions]\nallow = [\"bash\"]\n",
    )
    .unwrap();
    let mut child = run_until_started(&h).await;
    let pids: Vec<i32> =
        std::fs::read_to_string(h.path("pids")).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
    let [a, b, shell] = pids[..] else { panic!("{pids:?}") };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGKILL) };
    let _ = child.wait().await;
    // A process is gone when signal 0 cannot reach it (a zombie waiting for its reaper counts as gone).
    let alive = |pid: i32| {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = state.rsplit(") ").next().and_then(|r| r.chars().next());
        !matches!(state, None | Some('Z'))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(shell) {
        assert!(std::time::Instant::now() < deadline, "the shell outlived tern");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let left = [a, b].map(alive);
    for pid in [a, b] {
        // SAFETY: the test's own command's children, by the pids they reported.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(left, [true, true], "off: background children outlive a killed tern (docs/sandbox.md)");
}

#[tokio::test]
async fn a_confined_compound_command_dies_whole_with_tern_when_tern_is_killed() {
    // Two sleeps in the background of one shell, one of them in a session
    // of its own: with the sandbox on, the command's PID namespace ends with
    // tern, so neither outlives a kill -9 (a parent-death signal alone
    // reaches only the shell).
    let missing = tern_sandbox::require::pidns_missing();
    if tern_sandbox::require::skip("pidns", missing.as_deref()).unwrap_or_else(|why| panic!("{why}")) {
        return;
    }
    let (a, b) = ("4127.81", "4127.82");
    let command = format!("sleep {a} & setsid sleep {b} & echo started; wait");
    let mut h = Harness::new(
        Wire::Anthropic,
        &script(
            json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "x"}]}),
        ),
    )
    .await;
    // The default mode asks for bash; allowing it by rule keeps the sandbox (bypass would turn it off).
    h.mode = None;
    std::fs::write(
        h.home.path().join("config.toml"),
        "[retry]\nbase_delay_ms = 1\n[permissions]\nallow = [\"bash\"]\n",
    )
    .unwrap();
    let mut child = run_until_started(&h).await;
    assert!(!common::wait_present(&format!("sleep {a}")).await.is_empty());
    assert!(!common::wait_present(&format!("sleep {b}")).await.is_empty());
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait().await;
    assert_eq!(wait_gone(&format!("sleep {a}")).await, Vec::<u32>::new(), "the background child died with tern");
    assert_eq!(wait_gone(&format!("sleep {b}")).await, Vec::<u32>::new(), "the setsid child died with tern");
}

#[tokio::test]
async fn reading_a_fifo_is_refused_at_once_and_the_run_goes_on() {
    let h = Harness::new(
        Wire::Anthropic,
        &script(json!({"turns": [{"tool_calls": [{"name": "read", "arguments": {"path": "pipe.txt"}}]}, {"text": "moved on"}]})),
    )
    .await;
    let fifo = std::ffi::CString::new(h.path("pipe.txt").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // Nothing ever writes to the FIFO: a read that opened it would hang here.
    let out =
        tokio::time::timeout(std::time::Duration::from_secs(60), h.run(&["-p", "go"])).await.expect("hung on a FIFO");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "moved on\n");
    let (text, failed) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(failed && text.contains("not a regular file"), "{text}");
}

#[tokio::test]
async fn a_command_too_long_for_the_kernel_gets_a_clear_error() {
    let long = format!("echo {}", "x".repeat(200 * 1024));
    let h = Harness::new(
        Wire::Anthropic,
        &script(json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": long}}]}, {"text": "ok"}]})),
    )
    .await;
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (text, failed) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(failed);
    assert!(text.contains("at most 128 KB") && text.contains("write"), "{text}");
    assert!(!text.contains("Is bash installed"), "{text}");
}

#[tokio::test]
async fn no_key_names_every_way_to_start() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    // No key and no provider chosen: every way to start is named.
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern"));
    for (k, v) in h.homes() {
        cmd.env(k, v);
    }
    cmd.env_remove("ANTHROPIC_API_KEY").env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_BASE_URL");
    cmd.current_dir(h.workspace.path()).args(["-p", "hi"]);
    let out = cmd.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ANTHROPIC_API_KEY") && stderr.contains("OPENAI_API_KEY") && stderr.contains("local model"),
        "{stderr}"
    );
    // A provider chosen: only its key.
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern"));
    for (k, v) in h.homes() {
        cmd.env(k, v);
    }
    cmd.env_remove("ANTHROPIC_API_KEY").env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL");
    cmd.current_dir(h.workspace.path()).args(["-p", "hi", "--provider", "openai"]);
    let out = cmd.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OPENAI_API_KEY") && !stderr.contains("local model"), "{stderr}");
}
