//! Subagents through the real binary: the `task` tool runs a child with a
//! fresh context and a capped tool list; two children in one batch overlap;
//! the parent gets each answer; usage adds up; stream-json marks the child's
//! events with `parent_tool_use_id`; an interrupt kills a child's command.

use crate::common;

use common::{Harness, Wire, tool_names, wait_gone, write};
use serde_json::{Value, json};

fn two_children() -> String {
    json!({"turns": [
        {"when_request_contains": "ALPHA-CONTENT", "text": "alpha says hello"},
        {"when_request_contains": "You are a subagent (explore)", "faults": [{"delay_ms": 300}],
         "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"when_request_contains": "You are a subagent (verifier)", "faults": [{"delay_ms": 300}], "text": "beta verified"},
        {"tool_calls": [
            {"name": "task", "arguments": {"description": "look at a", "prompt": "Read a.txt and say what it holds", "subagent_type": "explore"}},
            {"name": "task", "arguments": {"description": "check b", "prompt": "Verify b", "subagent_type": "verifier"}}
        ]},
        {"text": "both done"}
    ]})
    .to_string()
}

#[tokio::test]
async fn two_subagents_run_at_once_with_fresh_contexts_and_their_answers_come_back() {
    let h = Harness::new(Wire::Anthropic, &two_children()).await;
    write(&h.path("a.txt"), "ALPHA-CONTENT\n");
    let out = h.run(&["-p", "PARENT-PROMPT", "--output-format", "tern-events"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = h.server.requests();
    assert_eq!(requests.len(), 5, "parent twice, explore twice, verifier once");
    let body = |r: &tern_mock_llm::LoggedRequest| r.body.to_string();
    let children: Vec<_> = requests.iter().filter(|r| body(r).contains("You are a subagent")).collect();
    assert_eq!(children.len(), 3);
    for c in &children {
        // A fresh context: none of the parent's conversation, and a capped tool list.
        assert!(!body(c).contains("PARENT-PROMPT"), "the child sees nothing of the parent's conversation");
        let tools = tool_names(&c.body);
        assert!(!tools.contains(&"task".to_string()) && !tools.contains(&"todo_write".to_string()), "{tools:?}");
        assert!(
            !tools.contains(&"write".to_string()) && !tools.contains(&"edit".to_string()),
            "read-only roles: {tools:?}"
        );
    }
    // The two first child requests overlap in time.
    let first = |marker: &str| {
        *children.iter().find(|c| body(c).contains(marker) && !body(c).contains("ALPHA-CONTENT")).unwrap()
    };
    let (a, b) = (first("subagent (explore)"), first("subagent (verifier)"));
    assert!(Some(a.received) < b.finished && Some(b.received) < a.finished, "the two children ran at the same time");
    // The parent got both answers, in call order.
    let parent_last = requests.last().unwrap();
    assert!(!body(parent_last).contains("You are a subagent"));
    let results = h.tool_results(&parent_last.body);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0], ("alpha says hello".to_string(), false));
    assert_eq!(results[1], ("beta verified".to_string(), false));
    // stream-json: the child's events carry the parent's call id.
    let lines = out.json_lines();
    let task_ids: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_start" && l["name"] == "task" && l.get("parent_tool_use_id").is_none())
        .map(|l| l["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(task_ids.len(), 2);
    let nested: Vec<&Value> = lines.iter().filter(|l| l.get("parent_tool_use_id").is_some()).collect();
    assert!(nested.iter().any(|l| l["type"] == "tool_call_start" && l["name"] == "read"), "the child's read shows");
    assert!(nested.iter().all(|l| task_ids.contains(&l["parent_tool_use_id"].as_str().unwrap().to_string())));
    // Usage: the result counts the children's tokens too.
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    let parent_tokens: u64 = requests
        .iter()
        .filter(|r| !body(r).contains("You are a subagent"))
        .map(|r| (r.body.to_string().len() / 4) as u64)
        .sum();
    let counted = result["usage"]["input_tokens"].as_u64().unwrap();
    assert!(counted > parent_tokens, "children's tokens counted: {counted} vs the parent's {parent_tokens}");
    // The session's conversation holds the answers, not the children's messages.
    let id = result["session_id"].as_str().unwrap();
    let export = h.run(&["sessions", "export", id, "--format", "json"]).await;
    let exported: Value = serde_json::from_str(&export.stdout).unwrap();
    assert_eq!(exported["messages"].as_array().unwrap().len(), 4, "{}", export.stdout);
}

#[tokio::test]
async fn an_interrupt_stops_the_subagent_and_kills_its_command() {
    use tokio::io::AsyncBufReadExt;
    let marker = "4094.25";
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (worker)",
         "tool_calls": [{"name": "bash", "arguments": {"command": format!("echo started; sleep {marker}")}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "wait", "prompt": "Wait a long time", "subagent_type": "worker"}}]},
        {"text": "unreachable"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut child = h.command(&["-p", "go", "--output-format", "tern-events"]).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "tool_execution_update" && v.get("parent_tool_use_id").is_some() {
            break;
        }
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let mut seen = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(wait_gone(&format!("sleep {marker}")).await, Vec::<u32>::new(), "the child's command is gone");
    let end = seen.iter().find(|v| v["type"] == "tool_execution_end" && v["name"] == "task").expect("task end");
    assert_eq!(end["is_error"], true, "{end}");
}

#[tokio::test]
async fn a_custom_agent_is_a_subagent_type_and_an_unknown_one_says_what_exists() {
    let script = json!({"turns": [
        {"when_request_contains": "REVIEWER-RULES", "text": "reviewed"},
        {"tool_calls": [
            {"name": "task", "arguments": {"description": "review", "prompt": "Review it", "subagent_type": "reviewer"}},
            {"name": "task", "arguments": {"description": "x", "prompt": "x", "subagent_type": "nobody"}}
        ]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    write(&h.home.path().join("agents/reviewer.md"), "---\ntools: read, grep\n---\nREVIEWER-RULES");
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = h.server.requests();
    let child = requests.iter().find(|r| r.body.to_string().contains("REVIEWER-RULES")).unwrap();
    assert_eq!(tool_names(&child.body), ["read", "grep"]);
    let results = h.tool_results(&requests.last().unwrap().body);
    assert_eq!(results[0], ("reviewed".to_string(), false));
    assert!(results[1].1 && results[1].0.contains("explore, worker, verifier"), "{:?}", results[1]);
}

#[tokio::test]
async fn a_subagent_in_the_background_answers_through_task_output() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (explore)", "text": "background answer"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "look", "prompt": "Look around", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let parent: Vec<&Value> = bodies.iter().filter(|b| !b.to_string().contains("You are a subagent")).collect();
    let (started, _) = h.tool_results(parent[1]).last().cloned().unwrap();
    assert!(started.contains("in the background as bg-1"), "{started}");
    let (answer, failed) = h.tool_results(parent[2]).last().cloned().unwrap();
    assert!(!failed && answer.contains("background answer") && answer.contains("bg-1 exited with code 0"), "{answer}");
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["background_tasks"][0]["status"], "exited", "{result}");
}

#[tokio::test]
async fn a_background_subagent_can_be_stopped() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (explore)", "faults": [{"delay_ms": 30000}], "text": "too late"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "slow", "prompt": "Take your time", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1"}}]},
        {"tool_calls": [{"name": "task_stop", "arguments": {"id": "bg-1"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let started = std::time::Instant::now();
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the stop did not wait for the slow child");
    let bodies = h.bodies();
    let parent: Vec<&Value> = bodies.iter().filter(|b| !b.to_string().contains("You are a subagent")).collect();
    let (running, _) = h.tool_results(parent[2]).last().cloned().unwrap();
    assert!(running.contains("bg-1 running"), "{running}");
    let (stopped, _) = h.tool_results(parent[3]).last().cloned().unwrap();
    assert!(stopped.contains("bg-1 stopped"), "{stopped}");
}

#[tokio::test]
async fn a_custom_agents_own_model_runs_it_and_prices_it() {
    let script = json!({"turns": [
        {"when_request_contains": "PRICEY-RULES", "text": "priced"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "p", "prompt": "go", "subagent_type": "pricey"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    write(&h.home.path().join("agents/pricey.md"), "---\nmodel: pricey-model\n---\nPRICEY-RULES");
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "\n[models.pricey-model]\ncontext_window = 100000\nmax_output = 4000\nimage_input = false\n\
         input_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n",
    );
    std::fs::write(&config, text).unwrap();
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = h.server.requests();
    let child = requests.iter().find(|r| r.body.to_string().contains("PRICEY-RULES")).unwrap();
    assert_eq!(child.body["model"], "pricey-model", "the agent's model runs it");
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0, "the child is priced at its own model's prices (the session's model costs nothing): {result}");
}

/// Background subagents hold no slot: with four of them still running, a
/// foreground `task` starts at once (it used to wait for as long as they ran).
#[tokio::test]
async fn background_subagents_do_not_block_a_foreground_one() {
    let slow = |n: u32| {
        json!({"name": "task", "arguments": {"description": format!("slow {n}"), "prompt": "verify slowly",
            "subagent_type": "verifier", "run_in_background": true}})
    };
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (verifier)", "faults": [{"delay_ms": 600000, "repeat": true}], "text": "never"},
        {"when_request_contains": "You are a subagent (explore)", "text": "found it"},
        {"tool_calls": [slow(1), slow(2), slow(3), slow(4)]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "quick", "prompt": "look", "subagent_type": "explore"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["result"], "done");
    let bodies = h.bodies();
    let last = bodies.iter().rev().find(|b| !b.to_string().contains("You are a subagent")).unwrap();
    let (answer, failed) = h.tool_results(last).last().cloned().unwrap();
    assert!(!failed && answer.contains("found it"), "{answer}");
}

/// `--verbose` marks a subagent's progress lines, and only those: no stray
/// markers for the events it does not show.
#[tokio::test]
async fn verbose_progress_marks_subagent_lines_only() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (explore)", "text": "child answer"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "look", "prompt": "look around", "subagent_type": "explore"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("  [subagent] ── turn 1"), "{}", out.stderr);
    for line in out.stderr.lines().filter(|l| l.contains("[subagent]")) {
        assert!(
            line.starts_with("  [subagent] ") && line.matches("[subagent]").count() == 1,
            "{line:?}\n{}",
            out.stderr
        );
        assert!(line.trim_end() != "[subagent]", "an empty marker: {}", out.stderr);
    }
}

/// A custom command's rules are said on stderr when it starts, without --verbose.
#[tokio::test]
async fn a_commands_rules_are_said_when_it_starts() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    write(
        &h.path(".tern/commands/mk.md"),
        "---\ndescription: Make dirs\nallowed-tools: bash(mkdir:*)\n---\nMake $ARGUMENTS\n",
    );
    let out = h.run(&["-p", "/mk x", "--trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("command mk allows `bash(mkdir:*)` while this prompt runs"), "{}", out.stderr);
}

/// A background subagent still running when tern exits is stopped, and what
/// it used counts in the session's totals (a usage record of its own).
#[tokio::test]
async fn a_background_subagents_usage_is_recorded_when_tern_exits() {
    let script = json!({"turns": [
        // The child: one response (a command that lets the parent go on), then one that never comes.
        {"when_request_contains": "CHILD-SECOND", "faults": [{"delay_ms": 600000, "repeat": true}], "text": "never"},
        {"when_request_contains": "You are a subagent (worker)",
         "usage": {"input_tokens": 1000000, "output_tokens": 11},
         "tool_calls": [{"name": "bash", "arguments": {"command": "touch childran; echo CHILD-SECOND"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "bg", "prompt": "work", "subagent_type": "worker", "run_in_background": true}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "while [ ! -e childran ]; do sleep 0.05; done"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    let log = h.home.path().join("sessions").join(format!("{}.jsonl", result["session_id"].as_str().unwrap()));
    let text = std::fs::read_to_string(log).unwrap();
    let usages: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["record"]["type"] == "usage" || v["type"] == "usage")
        .collect();
    let last = usages.last().expect("usage records");
    let record = if last["record"].is_null() { last } else { &last["record"] };
    assert!(record["session"]["input_tokens"].as_u64().unwrap() >= 1_000_000, "the child's tokens count: {record}");
    assert_eq!(record["run"]["input_tokens"], 1_000_000, "a record of its own: {record}");
}

#[tokio::test]
async fn read_only_roles_are_read_only_in_the_policy_whatever_the_parents_rules() {
    let script = json!({"turns": [
        {"when_request_contains": "the explore role is read-only", "text": "EXPLORE-WAS-REFUSED"},
        {"when_request_contains": "the verifier role runs", "text": "VERIFIER-WAS-ASKED"},
        {"when_request_contains": "You are a subagent (explore)",
         "tool_calls": [{"name": "bash", "arguments": {"command": "touch made-by-explore"}}]},
        {"when_request_contains": "You are a subagent (verifier)",
         "tool_calls": [{"name": "bash", "arguments": {"command": "touch made-by-verifier"}}]},
        {"tool_calls": [
            {"name": "task", "arguments": {"description": "look", "prompt": "Look around", "subagent_type": "explore"}},
            {"name": "task", "arguments": {"description": "check", "prompt": "Check it", "subagent_type": "verifier"}}
        ]},
        {"text": "done"}
    ]})
    .to_string();
    // The parent's own rules would let `touch` run; bypass would let anything run.
    for (mode, flags) in [(None, vec!["--allowed-tools", "bash(touch:*)"]), (Some("bypass"), vec![])] {
        let mut h = Harness::new(Wire::Anthropic, &script).await;
        h.mode = mode;
        let mut args = vec!["-p", "go"];
        args.extend(flags);
        let out = h.run(&args).await;
        assert_eq!(out.code, Some(0), "{mode:?}: {}", out.stderr);
        assert!(!h.path("made-by-explore").exists(), "{mode:?}: explore changed a file");
        assert!(!h.path("made-by-verifier").exists(), "{mode:?}: verifier ran a change nobody approved");
        let results = h.tool_results(h.bodies().last().unwrap());
        assert_eq!(results[0].0, "EXPLORE-WAS-REFUSED", "{mode:?}: {results:?}");
        assert_eq!(results[1].0, "VERIFIER-WAS-ASKED", "{mode:?}: {results:?}");
    }
}

#[tokio::test]
async fn agents_written_for_claude_code_are_found_by_name_with_their_model_alias() {
    // `.claude/agents/` in the project, the file named otherwise than the agent, and
    // `model: sonnet` as most Claude Code agents say it: a Claude model on this API.
    let script = json!({"turns": [
        {"when_request_contains": "CLAUDE-REVIEWER-RULES", "text": "reviewed"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "r", "prompt": "go", "subagent_type": "code-reviewer"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    write(
        &h.path(".claude/agents/review-helper.md"),
        "---\nname: code-reviewer\ndescription: Reviews code\nmodel: sonnet\ntools: Read, Grep\n---\nCLAUDE-REVIEWER-RULES",
    );
    let out = h.run(&["-p", "go", "--trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = h.server.requests();
    let child = requests.iter().find(|r| r.body.to_string().contains("CLAUDE-REVIEWER-RULES")).expect("the agent ran");
    assert_eq!(child.body["model"], "claude-sonnet-4-5", "the alias, not the literal `sonnet`");
    assert_eq!(tool_names(&child.body), ["read", "grep"]);
    let results = h.tool_results(&requests.last().unwrap().body);
    assert_eq!(results[0], ("reviewed".to_string(), false));
    // Untrusted, the repository's agent is not used, and the answer says why.
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    write(&h.path(".claude/agents/review-helper.md"), "---\nname: code-reviewer\n---\nCLAUDE-REVIEWER-RULES");
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(&h.server.requests().last().unwrap().body);
    assert!(results[0].1 && results[0].0.contains("not trusted"), "{:?}", results[0]);
}
