//! What goes into the context, through the real binary: instruction files
//! (order, CLAUDE.md fallback, `@` imports) listed at start and sent in the
//! system prompt; `tern context`; a byte-stable prefix across turns.

use crate::common;

use common::{Harness, Wire, write};
use serde_json::Value;

#[tokio::test]
async fn instruction_files_with_imports_are_listed_and_sent() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    std::fs::create_dir_all(h.path(".git")).unwrap();
    write(&h.path("AGENTS.md"), "Root rules. Style: @docs/style.md\n");
    write(&h.path("docs/style.md"), "IMPORTED-STYLE-RULES");
    write(&h.path("sub/CLAUDE.md"), "SUB-CLAUDE-RULES");
    let mut cmd = h.command(&["-p", "hi", "--output-format", "tern-events"]);
    cmd.current_dir(h.path("sub"));
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let init: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let files: Vec<String> =
        init["instruction_files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect();
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(
        files[0].ends_with("/AGENTS.md") && files[1].ends_with("docs/style.md") && files[2].ends_with("sub/CLAUDE.md")
    );
    let system = h.bodies()[0]["system"].to_string();
    let (root, imported, sub) = (
        system.find("Root rules").unwrap(),
        system.find("IMPORTED-STYLE").unwrap(),
        system.find("SUB-CLAUDE").unwrap(),
    );
    assert!(root < imported && imported < sub, "order: root, its import, then the subdirectory");
}

#[tokio::test]
async fn the_prefix_is_byte_stable_across_three_turns() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"bash","arguments":{"command":"echo one"}}]},
        {"tool_calls":[{"name":"bash","arguments":{"command":"echo two"}}]},
        {"text":"done"}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    assert_eq!(h.run(&["-p", "go"]).await.code, Some(0));
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    for b in &bodies[1..] {
        assert_eq!(b["system"], bodies[0]["system"], "system prompt (with its cache marker) is the same");
        assert_eq!(b["tools"], bodies[0]["tools"], "tools are the same, in order");
    }
    // Each request's messages start with the previous request's, apart from the moving cache markers.
    let strip = |v: &Value| -> Vec<Value> { common::without_cache_markers(&v["messages"]).as_array().unwrap().clone() };
    for w in bodies.windows(2) {
        let (a, b) = (strip(&w[0]), strip(&w[1]));
        assert_eq!(b[..a.len()], a[..]);
    }
}

#[tokio::test]
async fn tern_context_breaks_the_window_down() {
    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"ok"}]}"#).await;
    write(&h.path("AGENTS.md"), &"rule ".repeat(400));
    let out = h.run(&["context", "--json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    let part = |name: &str| {
        r["parts"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()["tokens"].as_u64().unwrap()
    };
    assert!(part("instruction files") >= 500, "{r}");
    assert!(part("tool definitions") > 1000, "{r}");
    assert_eq!(part("messages"), 0);
    assert_eq!(r["used"].as_u64().unwrap() + r["free"].as_u64().unwrap(), r["context_window"].as_u64().unwrap());
    let text = h.run(&["context"]).await.stdout;
    assert!(text.contains("auto-compaction at") && text.contains("AGENTS.md"), "{text}");
    assert_eq!(r["builtins_waiting"], serde_json::json!(common::WAITING), "{r}");
    assert!(
        text.contains(&format!("built-ins waiting behind tool_search: {}\n", common::WAITING.join(", "))),
        "{text}"
    );
}

#[tokio::test]
async fn tern_init_writes_agents_md_and_nothing_else() {
    let script = r##"{"turns":[
        {"tool_calls":[
            {"name":"write","arguments":{"path":"AGENTS.md","content":"# Agents\nRun `make test`.\n"}},
            {"name":"write","arguments":{"path":"other.md","content":"not allowed"}}
        ]},
        {"text":"Wrote AGENTS.md."}
    ]}"##;
    let mut h = Harness::new(Wire::Anthropic, script).await;
    h.mode = None;
    let out = h.run(&["init"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "Wrote AGENTS.md.");
    assert_eq!(std::fs::read_to_string(h.path("AGENTS.md")).unwrap(), "# Agents\nRun `make test`.\n");
    assert!(!h.path("other.md").exists(), "only AGENTS.md may be written");
    assert!(common::tool_names(&h.bodies()[0]).contains(&"write".to_string()));
    let prompt = h.bodies()[0]["messages"][0].to_string();
    assert!(prompt.contains("Study this repository and write an AGENTS.md"), "{prompt}");
    // An existing file is left alone unless --update.
    let out = h.run(&["init"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("tern init --update"), "{}", out.stderr);
}

#[tokio::test]
async fn an_untrusted_project_cannot_pick_instruction_files_or_drive_compaction() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"one"},{"text":"two"}]}"#).await;
    std::fs::write(
        h.home.path().join("config.toml"),
        "[retry]\nbase_delay_ms = 1\n[providers.anthropic]\napi_key = \"sk-ant-USERCONFIG-SECRET-123\"\n",
    )
    .unwrap();
    write(
        &h.path(".tern/config.toml"),
        "[compaction]\nreserve_tokens = 9999999999\nkeep_turns = 9223372036854775807\n[context]\nfiles = [\"config.toml\"]\n",
    );
    let out = h.run(&["-p", "first"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("ignored `[compaction]`") && out.stderr.contains("ignored `[context] files`"),
        "{}",
        out.stderr
    );
    let out = h.run(&["-c", "-p", "second"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.bodies().len(), 2, "no summary requests");
    for b in h.bodies() {
        assert!(!b.to_string().contains("USERCONFIG-SECRET"), "the user config never reaches the model");
    }
    // Trusted, names are still Markdown files only, and the config folder keeps its own names.
    let out = h.run(&["--trust", "context", "--json"]).await;
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(r["context_files"].as_array().unwrap().is_empty(), "{r}");
}

#[tokio::test]
async fn an_at_mention_sends_the_file_with_the_prompt() {
    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"seen"}]}"#).await;
    write(&h.path("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n");
    let out = h.run(&["-p", "what does @src/lib.rs return?", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("attached src/lib.rs (1 line)"), "{}", out.stderr);
    let body = h.bodies()[0].to_string();
    assert!(body.contains("<file path=\\\"src/lib.rs\\\">\\npub fn answer() -> u32 { 42 }"), "{body}");
}

#[tokio::test]
async fn a_prompt_larger_than_the_window_is_refused_before_it_is_sent() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"never"}]}"#).await;
    // ~10 MB: far past any model's window.
    let prompt = "lorem ipsum ".repeat(900_000);
    let mut cmd = h.command(&["-p", "--output-format", "json"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(prompt.as_bytes()).await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["errors"][0].as_str().unwrap().contains("more than"), "{r}");
    assert!(h.server.requests().is_empty(), "nothing was sent");
}
