//! Extending tern, through the real binary: skills from every place (listed
//! in the prompt, loaded only when used), custom slash commands with their
//! arguments, and agent profiles narrowing the tools the model gets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, Wire, tool_names, write};
use serde_json::Value;

/// The text of the last user message of a request body (Anthropic wire).
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn skills_from_every_place_are_listed_and_loaded_only_when_used() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"skill","arguments":{"name":"deploy","arguments":"to staging"}}]},
        {"text":"done"}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    write(&h.home.path().join("skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: Fill PDF forms\n---\nPDF-BODY");
    write(&h.path(".tern/skills/deploy/SKILL.md"), "---\nname: deploy\ndescription: Deploy the app\n---\nDEPLOY-BODY");
    write(&h.path(".tern/skills/deploy/scripts/check.sh"), "echo ok\n");
    write(&h.path(".claude/skills/lint/SKILL.md"), "---\ndescription: Lint the code\n---\nLINT-BODY");
    write(&h.path(".agents/skills/review/SKILL.md"), "---\ndescription: >\n  Review a\n  change\n---\nREVIEW-BODY");
    write(&h.path(".agents/skills/broken/SKILL.md"), "---\nname: broken\n");
    let out = h.run(&["-p", "deploy it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("broken/SKILL.md") && out.stderr.contains("not closed"), "{}", out.stderr);
    let bodies = h.bodies();
    let first = bodies[0]["system"].to_string();
    for listed in ["pdf: Fill PDF forms", "deploy: Deploy the app", "lint: Lint the code", "review: Review a change"] {
        assert!(first.contains(listed), "{listed} missing from the system prompt");
    }
    assert!(first.contains("tern-config"), "the bundled skill is listed");
    for body in ["PDF-BODY", "DEPLOY-BODY", "LINT-BODY", "REVIEW-BODY"] {
        assert!(!bodies[0].to_string().contains(body), "{body} must not be sent before it is used");
    }
    assert!(tool_names(&bodies[0]).contains(&"skill".to_string()));
    let results = h.tool_results(&bodies[1]);
    let (text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert!(text.contains("DEPLOY-BODY") && text.contains("scripts/check.sh") && text.contains("to staging"), "{text}");

    let out = h.run(&["skills", "list", "--json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let list: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let found: Vec<(String, String)> = list
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s["source"].as_str().unwrap().to_string()))
        .collect();
    let expected = [
        ("pdf", "user"),
        ("deploy", "project"),
        ("lint", "project"),
        ("review", "project"),
        ("tern-config", "bundled"),
    ];
    assert_eq!(found, expected.map(|(n, s)| (n.to_string(), s.to_string())));
    let text = h.run(&["skills", "list"]).await;
    assert!(text.stdout.contains("/deploy  (project,") && text.stderr.contains("broken"), "{}", text.stdout);
}

#[tokio::test]
async fn a_custom_command_expands_its_arguments_and_a_skill_runs_by_name() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    write(&h.path(".tern/commands/fix.md"), "---\ndescription: Fix an issue\n---\nFix issue #$1 in $2 ($ARGUMENTS).");
    write(&h.home.path().join("commands/git/summary.md"), "Summarise the last commits.");
    let out = h.run(&["-p", "/fix 42 'src/a b.rs'"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(last_user_text(&h.bodies()[0]), "Fix issue #42 in src/a b.rs (42 'src/a b.rs').");
    let out = h.run(&["-p", "/git:summary", "--no-session"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(last_user_text(&h.bodies()[1]), "Summarise the last commits.");
    // A skill by name: its instructions go with the request.
    let out = h.run(&["-p", "/tern-config add an allow rule for make"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = last_user_text(&h.bodies()[2]);
    assert!(sent.contains("# Configuring tern") && sent.ends_with("add an allow rule for make"), "{sent}");
    let out = h.run(&["commands", "list"]).await;
    assert!(out.stdout.contains("/fix  (project,") && out.stdout.contains("/git:summary  (user,"), "{}", out.stdout);
    // The person's own skill beats a repository's command of the same name.
    write(&h.home.path().join("skills/fix/SKILL.md"), "---\ndescription: my fix\n---\nMY-FIX-SKILL");
    let out = h.run(&["-p", "/fix 7"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(last_user_text(&h.bodies()[3]).contains("MY-FIX-SKILL"));
}

#[tokio::test]
async fn an_agent_file_narrows_the_tools_and_adds_its_instructions() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    write(
        &h.path(".tern/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews\ntools: read, grep\npermission-mode: bypassPermissions\n---\nREVIEWER-RULES",
    );
    // A project agent needs trust.
    let out = h.run(&["-p", "hi", "--agent", "reviewer"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("not trusted"), "{}", out.stderr);
    let out = h.run(&["-p", "hi", "--agent", "reviewer", "--trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("`permission_mode: bypass` is ignored"), "any spelling of bypass: {}", out.stderr);
    let body = &h.bodies()[0];
    assert_eq!(tool_names(body), ["read", "grep"]);
    assert!(body["system"].to_string().contains("REVIEWER-RULES"));
    let out = h.run(&["tools", "--agent", "reviewer", "--trust", "--explain"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("read") && out.stdout.contains("agent"), "{}", out.stdout);
}
