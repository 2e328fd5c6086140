//! Extending tern, through the real binary: skills from every place (listed
//! in the prompt, loaded only when used), custom slash commands with their
//! arguments, and agent profiles narrowing the tools the model gets.

use crate::common;

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

#[tokio::test]
async fn project_config_is_found_from_a_subdirectory_nearest_first() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    std::fs::create_dir_all(h.path(".git")).unwrap();
    std::fs::create_dir_all(h.path("pkg/deep")).unwrap();
    write(
        &h.path(".tern/config.toml"),
        "append_system_prompt = \"ROOT-MARKER\"\n[permissions]\ndeny = [\"bash(touch:*)\"]\n",
    );
    write(&h.path("pkg/.tern/config.toml"), "append_system_prompt = \"PKG-MARKER\"\n");
    write(&h.path(".mcp.json"), r#"{"mcpServers":{"rootsrv":{"command":"/nonexistent/root-server"}}}"#);
    write(&h.path("pkg/.mcp.json"), r#"{"mcpServers":{"pkgsrv":{"command":"/nonexistent/pkg-server"}}}"#);
    write(&h.path(".tern/agents/helper.md"), "---\nname: helper\ndescription: Helps\ntools: read\n---\nHELPER-RULES");
    write(&h.path(".tern/commands/hello.md"), "---\ndescription: root hello\n---\nROOT HELLO");
    write(&h.path("pkg/.tern/commands/hello.md"), "---\ndescription: pkg hello\n---\nPKG HELLO");
    let deep = h.path("pkg/deep").display().to_string();

    // The nearest config's value wins; the root's rules still hold.
    let out = h.run(&["-p", "hi", "--cwd", &deep]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let system = h.bodies()[0]["system"].to_string();
    assert!(system.contains("PKG-MARKER") && !system.contains("ROOT-MARKER"), "{system}");
    let out = h.run(&["permissions", "check", "bash(touch x)", "--json", "--cwd", &deep]).await;
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["decision"]["verdict"], "deny", "{v}");
    assert!(v.to_string().contains(".tern/config.toml"), "names the root file: {v}");

    // Untrusted: no server of the repository starts, and each file is named.
    let out = h.run(&["mcp", "list", "--cwd", &deep]).await;
    assert!(out.stderr.contains("pkg/.mcp.json") && out.stderr.contains("not trusted"), "{}", out.stderr);
    assert!(out.stderr.contains("rootsrv"), "{}", out.stderr);
    // `--trust` vouches for the working directory only, not the folders above it.
    let out = h.run(&["mcp", "list", "--json", "--cwd", &deep, "--trust"]).await;
    assert!(!out.stdout.contains("rootsrv") && !out.stdout.contains("pkgsrv"), "{}", out.stdout);
    // The repository trusted (everything below it): both files' servers are configured.
    let root = h.workspace.path().display().to_string();
    let out = h.run(&["trust", &root]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = h.run(&["mcp", "list", "--json", "--cwd", &deep]).await;
    assert!(out.stdout.contains("rootsrv") && out.stdout.contains("pkgsrv"), "{}", out.stdout);

    // Agents and commands: found up the tree, the nearest of one name first.
    let out = h.run(&["-p", "hi", "--cwd", &deep, "--agent", "helper"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(h.bodies().last().unwrap()["system"].to_string().contains("HELPER-RULES"));
    let out = h.run(&["commands", "list", "--json", "--cwd", &deep]).await;
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let hello: Vec<&Value> = list.as_array().unwrap().iter().filter(|c| c["name"] == "hello").collect();
    assert_eq!(hello.len(), 1, "{list}");
    assert_eq!(hello[0]["description"], "pkg hello");
}

#[tokio::test]
async fn trusting_a_subfolder_does_not_vouch_for_the_repository_above_it() {
    let mut h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    h.mode = None;
    std::fs::create_dir_all(h.path(".git")).unwrap();
    std::fs::create_dir_all(h.path("pkg")).unwrap();
    let pkg = std::fs::canonicalize(h.path("pkg")).unwrap();
    let config = format!("[retry]\nbase_delay_ms = 1\n[trust]\nfolders = [{:?}]\n", pkg.display().to_string());
    std::fs::write(h.home.path().join("config.toml"), config).unwrap();
    write(&h.path(".mcp.json"), r#"{"mcpServers":{"rootsrv":{"command":"/nonexistent/root-server"}}}"#);
    write(&h.path(".tern/config.toml"), "[permissions]\nallow = [\"bash(touch:*)\"]\n");
    write(&h.path("pkg/.mcp.json"), r#"{"mcpServers":{"pkgsrv":{"command":"/nonexistent/pkg-server"}}}"#);
    let out = h.run(&["mcp", "list", "--json", "--cwd", &pkg.display().to_string()]).await;
    assert!(out.stdout.contains("pkgsrv"), "{}", out.stdout);
    assert!(!out.stdout.contains("rootsrv"), "{}", out.stdout);
    assert!(out.stderr.contains("rootsrv") && out.stderr.contains("not trusted"), "{}", out.stderr);
    let out = h.run(&["permissions", "check", "bash(touch x)", "--json", "--cwd", &pkg.display().to_string()]).await;
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_ne!(v["decision"]["verdict"], "allow", "the untrusted root's allow rule does not hold: {v}");
}

#[tokio::test]
async fn command_shell_lines_run_through_the_policy_and_never_from_an_untrusted_folder() {
    let mut h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    h.mode = None;
    write(&h.path("visible-file.txt"), "x");
    // The user's own command, as Anthropic's /commit writes them: a read-only line runs unasked;
    // one the policy would ask about is refused headless (nobody to ask), unless the command allows it.
    write(
        &h.home.path().join("commands/status.md"),
        "---\ndescription: status\n---\nFiles: !`ls`\nMade: !`touch made-by-line`\nNow summarise.",
    );
    let out = h.run(&["-p", "/status"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = last_user_text(&h.bodies()[0]);
    assert!(sent.starts_with("Files: ") && sent.contains("visible-file.txt"), "{sent}");
    assert!(sent.contains("Made: [`touch made-by-line` was not run:"), "{sent}");
    assert!(sent.ends_with("Now summarise."), "{sent}");
    assert!(!h.path("made-by-line").exists());
    write(
        &h.home.path().join("commands/make.md"),
        "---\ndescription: make\nallowed-tools: Bash(touch:*)\n---\nMade: !`touch made-by-line`",
    );
    let out = h.run(&["-p", "/make"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(h.path("made-by-line").exists(), "the command's allowed-tools let its line run");
    // A repository's command in a folder that is not trusted runs no line at all.
    write(&h.path(".tern/commands/leak.md"), "Here: !`ls`");
    let out = h.run(&["-p", "/leak"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = last_user_text(&h.bodies()[2]);
    assert!(sent.contains("[`ls` was not run: this command comes from a folder that is not trusted]"), "{sent}");
    assert!(!sent.contains("visible-file.txt"), "{sent}");
}
