//! Permissions and hooks through the real binary in headless mode: what
//! would be asked is refused, named on stderr and listed in the result.

use crate::common;

use common::{BOTH, Harness, Wire, tool_names, write};
use serde_json::{Value, json};

fn script(v: Value) -> String {
    v.to_string()
}

async fn strict(wire: Wire, turns: Value) -> Harness {
    let mut h = Harness::new(wire, &script(json!({ "turns": turns }))).await;
    h.mode = None;
    h
}

fn result_line(stdout: &str) -> Value {
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON: {last:?}: {e}"))
}

#[tokio::test]
async fn headless_refuses_what_it_would_ask_and_says_how_to_allow_it() {
    for wire in BOTH {
        let h = strict(
            wire,
            json!([
                {"tool_calls": [{"name": "write", "arguments": {"path": "new.txt", "content": "hi\n"}},
                                {"name": "bash", "arguments": {"command": "git status"}}]},
                {"text": "could not write"}
            ]),
        )
        .await;
        let out = h.run(&["-p", "write a file", "--output-format", "json"]).await;
        assert_eq!(out.code, Some(0), "{wire:?} stderr: {}", out.stderr);
        assert!(!h.path("new.txt").exists(), "{wire:?}: the write must not happen");
        assert!(out.stderr.contains("denied write `new.txt`"), "{wire:?}: {}", out.stderr);
        assert!(out.stderr.contains("--permission-mode accept-edits"), "{wire:?}: {}", out.stderr);
        assert!(out.stderr.contains("--allowed-tools 'edit(new.txt)'"), "{wire:?}: {}", out.stderr);
        let result = result_line(&out.stdout);
        let denials = result["permission_denials"].as_array().unwrap();
        assert_eq!(denials.len(), 1, "{wire:?}: only the write; git status is read-only: {result}");
        assert_eq!(denials[0]["tool_name"], "Write");
        assert_eq!(denials[0]["tool_input"]["file_path"], "new.txt");
        let results = h.tool_results(&h.bodies()[1]);
        assert!(results[0].0.contains("Permission denied"), "{wire:?}: {:?}", results[0]);
        assert!(!results[1].0.contains("Permission denied"), "{wire:?}: {:?}", results[1]);
    }
}

#[tokio::test]
async fn modes_and_allow_rules_let_calls_through() {
    let turns = json!([
        {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a\n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch b.txt"}},
                        {"name": "bash", "arguments": {"command": "rm -f a.txt"}}]},
        {"text": "done"}
    ]);
    let h = strict(Wire::Anthropic, turns.clone()).await;
    let out = h
        .run(&[
            "-p",
            "go",
            "--output-format",
            "json",
            "--permission-mode",
            "accept-edits",
            "--allowed-tools",
            "bash(touch:*)",
        ])
        .await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(h.path("a.txt").exists(), "accept-edits allows the write");
    assert!(h.path("b.txt").exists(), "the allow rule covers touch");
    let denials = result_line(&out.stdout)["permission_denials"].clone();
    assert_eq!(denials.as_array().unwrap().len(), 1, "{denials}");
    assert_eq!(denials[0]["tool_input"]["command"], "rm -f a.txt");
    assert!(out.stderr.contains("--allowed-tools 'bash(rm -f a.txt)'"), "{}", out.stderr);

    // bypass runs everything, but a deny rule in the project config still holds.
    let h = strict(Wire::Anthropic, turns).await;
    write(&h.path(".tern/config.toml"), "[permissions]\ndeny = [\"bash(rm:*)\"]\n");
    let out = h.run(&["-p", "go", "--output-format", "json", "--permission-mode", "bypass"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(h.path("b.txt").exists() && h.path("a.txt").exists());
    let denials = result_line(&out.stdout)["permission_denials"].clone();
    assert_eq!(denials[0]["tool_input"]["command"], "rm -f a.txt", "{denials}");
    assert!(denials[0]["reason"].as_str().unwrap().contains("bash(rm:*)"), "{denials}");
}

#[tokio::test]
async fn plan_mode_hides_write_tools_and_refuses_writes() {
    let h = strict(
        Wire::Anthropic,
        json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo x > out.txt"}},
                            {"name": "bash", "arguments": {"command": "ls"}}]},
            {"text": "planned"}
        ]),
    )
    .await;
    let out = h.run(&["-p", "plan it", "--output-format", "json", "--permission-mode", "plan"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let names = tool_names(&h.bodies()[0]);
    assert!(!names.contains(&"write".into()) && !names.contains(&"edit".into()), "{names:?}");
    assert!(names.contains(&"bash".into()) && names.contains(&"read".into()), "{names:?}");
    assert!(!h.path("out.txt").exists());
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("plan mode"), "{:?}", results[0]);
    assert!(!results[1].1, "ls runs in plan mode: {:?}", results[1]);
}

#[tokio::test]
async fn hooks_block_rewrite_and_fail_closed() {
    let h = strict(
        Wire::Anthropic,
        json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo original"}},
                            {"name": "read", "arguments": {"path": "secret.txt"}},
                            {"name": "glob", "arguments": {"pattern": "*"}}]},
            {"text": "done"}
        ]),
    )
    .await;
    write(&h.path("secret.txt"), "s3cret\n");
    let hooks = h.home.path().join("hooks");
    write(
        &hooks.join("rewrite.sh"),
        "#!/bin/sh\necho '{\"decision\": \"allow\", \"updated_input\": {\"command\": \"echo rewritten\"}}'\n",
    );
    write(&hooks.join("block.sh"), "#!/bin/sh\necho 'secrets stay secret' >&2\nexit 2\n");
    write(&hooks.join("broken.sh"), "#!/bin/sh\necho 'not json at all'\n");
    add_hooks(
        &h,
        &format!(
            "[[hooks.pre_tool_use]]\nmatcher = \"bash\"\ncommand = \"sh {0}/rewrite.sh\"\n\n\
             [[hooks.pre_tool_use]]\nmatcher = \"read\"\ncommand = \"sh {0}/block.sh\"\n\n\
             [[hooks.pre_tool_use]]\nmatcher = \"glob\"\ncommand = \"sh {0}/broken.sh\"\n",
            hooks.display()
        ),
    );
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("rewritten") && !results[0].0.contains("original"), "{:?}", results[0]);
    assert!(results[1].0.contains("secrets stay secret") && !results[1].0.contains("s3cret"), "{:?}", results[1]);
    assert!(results[2].0.contains("invalid JSON"), "garbage fails closed: {:?}", results[2]);
    let denials = result_line(&out.stdout)["permission_denials"].as_array().unwrap().len();
    assert_eq!(denials, 2);
}

fn add_hooks(h: &Harness, text: &str) {
    let f = h.home.path().join("config.toml");
    let mut s = std::fs::read_to_string(&f).unwrap_or_default();
    s.push('\n');
    s.push_str(text);
    std::fs::write(f, s).unwrap();
}

#[tokio::test]
async fn prompt_and_stop_hooks() {
    // user_prompt_submit exit 2 blocks the prompt before any request.
    let h = strict(Wire::Anthropic, json!([{"text": "never"}])).await;
    add_hooks(&h, "[[hooks.user_prompt_submit]]\ncommand = \"echo no prompts today >&2; exit 2\"\n");
    let out = h.run(&["-p", "hello"]).await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("no prompts today"), "{}", out.stderr);
    assert!(h.bodies().is_empty());

    // A stop hook sends the model back once, then lets it stop.
    let h = strict(Wire::Anthropic, json!([{"text": "done early"}, {"text": "really done"}])).await;
    let marker = h.home.path().join("stopped-once");
    add_hooks(
        &h,
        &format!(
            "[[hooks.stop]]\ncommand = \"if [ -e {0} ]; then exit 0; fi; touch {0}; echo run the tests first >&2; exit 2\"\n",
            marker.display()
        ),
    );
    let out = h.run(&["-p", "work"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "really done\n");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1]["messages"].to_string().contains("run the tests first"), "{}", bodies[1]["messages"]);
}

#[tokio::test]
async fn permissions_check_explains_decisions() {
    let h = strict(Wire::Anthropic, json!([])).await;
    write(
        &h.path(".tern/config.toml"),
        "[permissions]\nallow = [\"bash(npm run test:*)\"]\ndeny = [\"read(~/.ssh/**)\"]\n",
    );
    let out = h.run(&["permissions", "check", "bash(git push --force origin main)"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(out.stdout.contains("decision:   ask"), "{}", out.stdout);
    assert!(out.stdout.contains("dangerous"), "{}", out.stdout);
    assert!(out.stdout.contains("bash(git push --force origin main)"), "{}", out.stdout);

    // A project's allow rules need a trusted folder.
    let out = h.run(&["permissions", "check", "bash(npm run test -- --watch && git status)", "--json"]).await;
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["decision"]["verdict"], "ask", "{v:#}");
    assert!(out.stderr.contains("ignored allow rule(s) `bash(npm run test:*)`"), "{}", out.stderr);
    let out =
        h.run(&["permissions", "check", "bash(npm run test -- --watch && git status)", "--json", "--trust"]).await;
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["decision"]["verdict"], "allow", "{v:#}");
    assert_eq!(v["decision"]["decided_by"]["rule"], "bash(npm run test:*)");
    assert_eq!(v["decision"]["bash"]["parts"].as_array().unwrap().len(), 2);

    let out = h.run(&["permissions", "check", "read(~/.ssh/id_rsa)", "--permission-mode", "bypass"]).await;
    assert!(out.stdout.contains("decision:   deny") && out.stdout.contains("read(~/.ssh/**)"), "{}", out.stdout);

    let out = h.run(&["permissions", "list"]).await;
    assert!(
        out.stdout.contains("deny   read(~/.ssh/**)") && out.stdout.contains(".tern/config.toml"),
        "{}",
        out.stdout
    );

    let out = h.run(&["permissions", "check", "bash(ls", "--json"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let out = h.run(&["permissions", "check", "ls", "--allowed-tools", "todo_write(x)"]).await;
    assert_eq!(out.code, Some(2), "a rule that can never match is an error: {}", out.stderr);
    assert!(out.stderr.contains("takes no argument pattern"), "{}", out.stderr);
}

#[tokio::test]
async fn calls_that_cannot_work_fail_before_anyone_is_asked() {
    let h = strict(
        Wire::Anthropic,
        json!([
            {"tool_calls": [{"name": "edit", "arguments": {"path": "notes.txt", "old_string": "a", "new_string": "b"}},
                            {"name": "write", "arguments": {"path": "notes.txt", "content": "x\n"}}]},
            {"text": "done"}
        ]),
    )
    .await;
    write(&h.path("notes.txt"), "a\n");
    let out = h.run(&["-p", "change it", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("before you edit"), "{:?}", results[0]);
    assert!(results[1].0.contains("before you overwrite"), "{:?}", results[1]);
    assert_eq!(result_line(&out.stdout)["permission_denials"], json!([]), "nothing was asked");
    assert!(!out.stderr.contains("denied"), "{}", out.stderr);
}

#[tokio::test]
async fn searches_skip_files_a_read_deny_rule_covers() {
    let mut h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "grep", "arguments": {"pattern": "KEY", "output_mode": "content"}},
                            {"name": "glob", "arguments": {"pattern": "**/*.txt"}},
                            {"name": "ls", "arguments": {}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    h.mode = Some("bypass");
    write(&h.path("secrets/key.txt"), "KEY=hunter2\n");
    write(&h.path("notes.txt"), "KEY is documented here\n");
    let out = h.run(&["-p", "find keys", "--disallowed-tools", "read(secrets/**)"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("notes.txt") && !results[0].0.contains("hunter2"), "{:?}", results[0]);
    assert!(results[1].0.contains("notes.txt") && !results[1].0.contains("key.txt"), "{:?}", results[1]);
    // The listing ran (an error would also lack `secrets`) and shows the rest.
    assert!(!results[2].1 && results[2].0.contains("notes.txt"), "{:?}", results[2]);
    assert!(!results[2].0.contains("secrets"), "{:?}", results[2]);
}

#[tokio::test]
async fn claude_code_tool_names_hide_the_tool_they_deny() {
    let h = strict(Wire::Anthropic, json!([])).await;
    let out = h.run(&["tools", "--json", "--disallowed-tools", "TodoWrite"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"bash") && !names.contains(&"todo_write"), "{names:?}");
    assert_eq!(v["removed"][0]["name"], "todo_write", "{v:#}");
}

#[tokio::test]
async fn a_full_width_tool_name_in_a_rule_is_the_tool_as_in_every_other_list() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[]}"#).await;
    let out = h.run(&["tools", "--json", "--disallowed-tools", "ＲＥＡＤ"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let offered: Vec<&str> = report["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!offered.contains(&"read") && offered.contains(&"write"), "{offered:?}");
    let out = h.run(&["tools", "--json", "--disallowed-tools", "bäsh"]).await;
    assert_eq!(out.code, Some(2), "a name that is not one stays an error: {}", out.stderr);
}
