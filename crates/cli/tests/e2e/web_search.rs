//! The provider's server-side `web_search` through the real binary against
//! the mock: declared in the shape each provider documents (Anthropic
//! `web_search_20250305`, OpenAI Responses `web_search`), never as a
//! function; its blocks kept and sent back verbatim; its cost counted; the
//! policy's rules passed on as domain filters or removing it; absent, with
//! the reason in `tern tools --explain`, where the provider has none.

use crate::common;

use common::{Harness, Wire, tool_names};
use serde_json::{Value, json};

/// A search with two results and an answer that cites them, then (after a
/// tool call in the same reply) a second request that must carry it all back.
fn script() -> String {
    json!({"turns": [
        {"web_search": {"query": "rust 2026 edition", "results": [
            {"url": "https://blog.rust-lang.org/edition", "title": "The edition"},
            {"url": "https://doc.rust-lang.org/guide", "title": "Edition guide"}]},
         "text": "The edition is out.", "tool_calls": [{"name": "ls", "arguments": {}}]},
        {"text": "done"}
    ]})
    .to_string()
}

fn enable(h: &Harness, extra: &str) {
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[web_search]\nenabled = true\n{extra}"));
    std::fs::write(config, text).unwrap();
}

fn server_tools(body: &Value) -> Vec<Value> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.get("input_schema").is_none() && t["type"] != "function")
        .cloned()
        .collect()
}

#[tokio::test]
async fn anthropic_declares_the_tool_keeps_the_blocks_and_sends_them_back() {
    let h = Harness::new(Wire::Anthropic, &script()).await;
    enable(&h, "max_uses = 3\n");
    let out = h.run(&["-p", "what is new?", "--output-format", "tern-events", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(
        server_tools(&bodies[0]),
        vec![json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3})]
    );
    assert!(
        !bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "web_search" && t.get("input_schema").is_some()),
        "web_search is declared by type, not as a function"
    );
    // The second request carries the provider's blocks as they came (encrypted content included).
    let assistant = &bodies[1]["messages"][1]["content"];
    let types: Vec<&str> = assistant.as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["server_tool_use", "web_search_tool_result", "text", "tool_use"], "{assistant}");
    assert_eq!(assistant[0]["input"], json!({"query": "rust 2026 edition"}));
    assert_eq!(assistant[1]["content"][0]["encrypted_content"], "mock-encrypted-0-0");
    assert_eq!(assistant[1]["tool_use_id"], assistant[0]["id"]);
    // Stream-json shows the search, its results and the citations; the search is priced.
    let lines = out.json_lines();
    let message = lines.iter().find(|l| l["type"] == "assistant_message").unwrap();
    let blocks = message["message"]["content"].as_array().unwrap();
    let result = blocks.iter().find(|b| b["type"] == "server_tool_result").unwrap();
    assert_eq!(result["sources"][1]["url"], "https://doc.rust-lang.org/guide");
    let cites = blocks.iter().find(|b| b["type"] == "citations").unwrap();
    assert_eq!(cites["sources"][0]["title"], "The edition");
    assert_eq!(message["usage"]["web_search_requests"], 1);
    let end = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(end["usage"]["server_tool_use"]["web_search_requests"], 1, "{end}");
}

#[tokio::test]
async fn responses_declares_web_search_and_sends_the_call_item_back() {
    let h = Harness::new(Wire::OpenAi, &script()).await;
    enable(&h, "[providers.openai]\napi = \"responses\"\n");
    let out = h.run(&["-p", "what is new?", "--allowed-tools", "web_search(domain:rust-lang.org)"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(
        server_tools(&bodies[0]),
        vec![json!({"type": "web_search", "filters": {"allowed_domains": ["rust-lang.org"]}})]
    );
    assert_eq!(bodies[0]["include"], json!(["web_search_call.action.sources"]));
    let input = bodies[1]["input"].as_array().unwrap();
    let call = input.iter().find(|i| i["type"] == "web_search_call").expect("the search call goes back");
    assert_eq!(call["id"], "ws_mock_0");
    assert_eq!(call["action"]["query"], "rust 2026 edition");
    let at = |t: &str| input.iter().position(|i| i["type"] == t).unwrap();
    assert!(at("web_search_call") < at("function_call"), "in the order the response had them");
}

#[tokio::test]
async fn rules_become_domain_filters_or_remove_the_tool_with_the_reason() {
    let h = Harness::new(Wire::Anthropic, &script()).await;
    enable(&h, "[permissions]\ndeny = [\"web_search(domain:spam.example)\"]\n");
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let tools = server_tools(&h.bodies()[0]);
    assert_eq!(tools[0]["blocked_domains"], json!(["spam.example"]));

    let denied = Harness::new(Wire::Anthropic, &script()).await;
    enable(&denied, "[permissions]\ndeny = [\"web_search\"]\n");
    let out = denied.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(server_tools(&denied.bodies()[0]).is_empty());
    // Without the tool declared, the provider does not search: nothing to send back.
    let second = &denied.bodies()[1]["messages"][1]["content"];
    assert!(!second.to_string().contains("server_tool_use"), "{second}");
    let explain = denied.run(&["tools", "--explain"]).await;
    assert!(
        explain.stdout.contains("web_search") && explain.stdout.contains("denied by rule `web_search`"),
        "{}",
        explain.stdout
    );

    let asked = Harness::new(Wire::Anthropic, &script()).await;
    enable(&asked, "[permissions]\nask = [\"web_search\"]\n");
    let explain = asked.run(&["tools", "--explain"]).await;
    assert!(explain.stdout.contains("cannot ask"), "{}", explain.stdout);
}

#[tokio::test]
async fn absent_where_the_provider_has_none_and_the_reason_is_explained() {
    // Chat Completions has no server-side search, whatever the config says.
    let chat = Harness::new(Wire::OpenAi, &script()).await;
    enable(&chat, "");
    let out = chat.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!tool_names(&chat.bodies()[0]).contains(&"web_search".to_string()));
    assert!(!chat.bodies()[0].to_string().contains("web_search"), "not declared in any form");
    let explain = chat.run(&["tools", "--explain"]).await;
    assert!(explain.stdout.contains("Chat Completions has no server-side search"), "{}", explain.stdout);

    // An endpoint that is not the provider's own: off unless the config says it searches.
    let local = Harness::new(Wire::Anthropic, &script()).await;
    let out = local.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(server_tools(&local.bodies()[0]).is_empty());
    let explain = local.run(&["tools", "--explain"]).await;
    assert!(explain.stdout.contains("[web_search] enabled = true"), "{}", explain.stdout);
}

#[tokio::test]
async fn a_paused_turn_is_sent_back_as_it_is_and_goes_on() {
    let script = json!({"turns": [
        {"web_search": {"query": "q", "results": [{"url": "https://a.example/", "title": "A"}]},
         "text": "Looking further.", "stop_reason": "pause_turn"},
        {"text": "All found."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    enable(&h, "");
    let out = h.run(&["-p", "search", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["result"], "All found.");
    let messages = h.bodies()[1]["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 2, "no user message is added after a pause: {messages:?}");
    assert_eq!(messages[1]["role"], "assistant");
}

#[tokio::test]
async fn a_repository_can_turn_searches_off_or_lower_them_never_raise_them() {
    let h = Harness::new(Wire::Anthropic, &script()).await;
    enable(&h, "");
    common::write(&h.path(".tern/config.toml"), "[web_search]\nmax_uses = 500\n");
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("`[web_search] max_uses = 500` is ignored"), "{}", out.stderr);
    assert_eq!(server_tools(&h.bodies()[0])[0]["max_uses"], 5);

    let off = Harness::new(Wire::Anthropic, &script()).await;
    enable(&off, "");
    common::write(&off.path(".tern/config.toml"), "[web_search]\nenabled = false\nmax_uses = 2\n");
    let out = off.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(server_tools(&off.bodies()[0]).is_empty());

    // Turning it on at an endpoint that is not the provider's own is the person's call.
    let on = Harness::new(Wire::Anthropic, &script()).await;
    common::write(&on.path(".tern/config.toml"), "[web_search]\nenabled = true\n");
    let out = on.run(&["-p", "go"]).await;
    assert!(out.stderr.contains("`[web_search] enabled = true` is ignored"), "{}", out.stderr);
    assert!(server_tools(&on.bodies()[0]).is_empty());
}
